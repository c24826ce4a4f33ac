package org.junit;

/** Shim: org.junit.Test (JUnit 4). */
@java.lang.annotation.Retention(java.lang.annotation.RetentionPolicy.RUNTIME)
public @interface Test {}

package org.junit.runner;

/** Shim: org.junit.runner.RunWith (JUnit 4). */
@java.lang.annotation.Retention(java.lang.annotation.RetentionPolicy.RUNTIME)
public @interface RunWith {
  Class<?> value();
}

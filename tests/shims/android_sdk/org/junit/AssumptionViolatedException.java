package org.junit;

/** Shim: org.junit.AssumptionViolatedException (JUnit 4.12+: what a failed Assume throws). */
public class AssumptionViolatedException extends RuntimeException {
  public AssumptionViolatedException(String message) { super(message); }
}

package org.junit;

/** Fake: org.junit.Assume.assumeTrue, throwing AssumptionViolatedException as JUnit 4 does (the test is skipped). */
public class Assume {
  public static void assumeTrue(String message, boolean b) {
    if (!b) throw new AssumptionViolatedException(message);
  }
}

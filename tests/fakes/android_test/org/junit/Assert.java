package org.junit;

/** Fake: org.junit.Assert, the overloads the generated tests call, failing as JUnit 4 does (AssertionError). */
public class Assert {
  public static void assertTrue(String message, boolean condition) {
    if (!condition) throw new AssertionError(message);
  }

  public static void assertEquals(String message, long expected, long actual) {
    if (expected != actual) throw new AssertionError(message + " expected:<" + expected + "> but was:<" + actual + ">");
  }

  public static void assertEquals(String message, Object expected, Object actual) {
    if (!java.util.Objects.equals(expected, actual)) throw new AssertionError(message + " expected:<" + expected + "> but was:<" + actual + ">");
  }

  public static void assertArrayEquals(String message, byte[] expecteds, byte[] actuals) {
    if (!java.util.Arrays.equals(expecteds, actuals)) throw new AssertionError(message);
  }

  public static void assertArrayEquals(String message, long[] expecteds, long[] actuals) {
    if (!java.util.Arrays.equals(expecteds, actuals)) throw new AssertionError(message);
  }
}

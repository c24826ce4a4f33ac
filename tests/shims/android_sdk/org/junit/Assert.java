package org.junit;

/** Shim: org.junit.Assert (JUnit 4; the overloads the generated tests call). */
public class Assert {
  public static void assertTrue(String message, boolean condition) { throw new UnsupportedOperationException("shim"); }

  public static void assertEquals(String message, long expected, long actual) { throw new UnsupportedOperationException("shim"); }

  public static void assertEquals(String message, Object expected, Object actual) { throw new UnsupportedOperationException("shim"); }

  public static void assertArrayEquals(String message, byte[] expecteds, byte[] actuals) { throw new UnsupportedOperationException("shim"); }

  public static void assertArrayEquals(String message, long[] expecteds, long[] actuals) { throw new UnsupportedOperationException("shim"); }
}

package android.util;

/** Shim: android.util.Log (signatures only). */
public final class Log {
  private Log() {}

  public static int i(String tag, String msg) { throw new UnsupportedOperationException("shim"); }

  public static int w(String tag, String msg) { throw new UnsupportedOperationException("shim"); }
}

package android.util;

/** Fake: android.util.Log printing to stderr. */
public final class Log {
  private Log() {}

  public static int i(String tag, String msg) {
    System.err.println("I/" + tag + ": " + msg);
    return 0;
  }

  public static int w(String tag, String msg) {
    System.err.println("W/" + tag + ": " + msg);
    return 0;
  }
}

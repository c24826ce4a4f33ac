package android.os;

/** Shim: android.os.Build (signatures only). */
public class Build {
  public static class VERSION {
    public static final int SDK_INT = 0;
  }
}

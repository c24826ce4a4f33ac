package android.os;

/** Shim: android.os.Build (signatures only). */
public class Build {
  // developer.android.com/reference/android/os/Build#SUPPORTED_ABIS (API 21): the device's ABIs, preferred first.
  public static final String[] SUPPORTED_ABIS = new String[0];

  // developer.android.com/reference/android/os/Build#MODEL, #SOC_MODEL (API 31)
  public static final String MODEL = "";
  public static final String SOC_MODEL = "";
  public static class VERSION {
    public static final int SDK_INT = 0;
    public static final String RELEASE = "";
  }
}

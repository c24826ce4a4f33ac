package android.os;

/** Fake: android.os.Build; SUPPORTED_ABIS from -Dfakeandroid.abis (see tests/fakes/README.md). */
public class Build {
  public static final String[] SUPPORTED_ABIS = System.getProperty("fakeandroid.abis", "arm64-v8a").split(",");

  public static final String MODEL = "fake";
  public static final String SOC_MODEL = "fake";

  public static class VERSION {
    public static final int SDK_INT = 0;
    public static final String RELEASE = "fake";
  }
}

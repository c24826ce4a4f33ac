package android.os;

/** Fake: android.os.Build; SUPPORTED_ABIS from -Dfakeandroid.abis (see tests/fakes/README.md). */
public class Build {
  public static final String[] SUPPORTED_ABIS = System.getProperty("fakeandroid.abis", "arm64-v8a").split(",");

  public static class VERSION {
    public static final int SDK_INT = 0;
  }
}

package android.system;

/** Fake: android.system.Os; setenv is recorded as the system property fakeandroid.env.NAME. */
public final class Os {
  private Os() {}

  public static void setenv(String name, String value, boolean overwrite) throws ErrnoException {
    System.setProperty("fakeandroid.env." + name, value);
  }
}

package android.system;

/** Shim: android.system.Os (signatures only). */
public final class Os {
  private Os() {}

  public static void setenv(String name, String value, boolean overwrite) throws ErrnoException {
    throw new UnsupportedOperationException("shim");
  }
}

package android.os;

/** Shim: android.os.Bundle (signatures only; the calls the instrumented benchmarks and their JVM harness make). */
public final class Bundle {
  public Bundle() {}
  public String getString(String key) { throw new UnsupportedOperationException("shim"); }
  public void putString(String key, String value) { throw new UnsupportedOperationException("shim"); }
}

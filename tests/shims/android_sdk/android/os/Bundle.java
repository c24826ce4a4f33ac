package android.os;

/** Shim: android.os.Bundle (signatures only; the getter the instrumented benchmarks call). */
public final class Bundle {
  public String getString(String key) { throw new UnsupportedOperationException("shim"); }
}

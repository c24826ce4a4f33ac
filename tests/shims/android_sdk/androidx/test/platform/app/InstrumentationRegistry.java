package androidx.test.platform.app;

/** Shim: androidx.test.platform.app.InstrumentationRegistry (signatures only). */
public final class InstrumentationRegistry {
  private InstrumentationRegistry() {}

  public static android.app.Instrumentation getInstrumentation() { throw new UnsupportedOperationException("shim"); }
  public static android.os.Bundle getArguments() { throw new UnsupportedOperationException("shim"); }
  public static void registerInstance(android.app.Instrumentation instrumentation, android.os.Bundle arguments) { throw new UnsupportedOperationException("shim"); }
}

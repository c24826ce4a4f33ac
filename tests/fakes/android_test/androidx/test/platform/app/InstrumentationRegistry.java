package androidx.test.platform.app;

/** Fake: androidx.test.platform.app.InstrumentationRegistry holding what registerInstance was given. */
public final class InstrumentationRegistry {
  private static android.app.Instrumentation instrumentation;
  private static android.os.Bundle arguments = new android.os.Bundle();

  private InstrumentationRegistry() {}

  public static android.app.Instrumentation getInstrumentation() {
    if (instrumentation == null) throw new IllegalStateException("No instrumentation registered");
    return instrumentation;
  }

  public static android.os.Bundle getArguments() { return arguments; }

  public static void registerInstance(android.app.Instrumentation i, android.os.Bundle a) {
    instrumentation = i;
    arguments = a;
  }
}

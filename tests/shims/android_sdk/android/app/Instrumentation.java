package android.app;

/** Shim: android.app.Instrumentation (signatures only). */
public class Instrumentation {
  public android.content.Context getContext() { throw new UnsupportedOperationException("shim"); }

  public android.content.Context getTargetContext() { throw new UnsupportedOperationException("shim"); }
}

package android.system;

/** Shim: android.system.ErrnoException (signatures only). */
public final class ErrnoException extends Exception {
  public ErrnoException(String functionName, int errno) {
    super(functionName);
  }
}

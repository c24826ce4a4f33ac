package android.content.res;

/** Shim: android.content.res.AssetFileDescriptor (signatures only). */
public class AssetFileDescriptor implements java.io.Closeable {
  public java.io.FileDescriptor getFileDescriptor() { throw new UnsupportedOperationException("shim"); }

  public long getStartOffset() { throw new UnsupportedOperationException("shim"); }

  public long getDeclaredLength() { throw new UnsupportedOperationException("shim"); }

  @Override
  public void close() throws java.io.IOException { throw new UnsupportedOperationException("shim"); }
}

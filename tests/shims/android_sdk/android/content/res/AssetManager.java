package android.content.res;

/** Shim: android.content.res.AssetManager (signatures only). */
public final class AssetManager implements AutoCloseable {
  private AssetManager() {}

  public java.io.InputStream open(String fileName) throws java.io.IOException {
    throw new UnsupportedOperationException("shim");
  }

  public AssetFileDescriptor openFd(String fileName) throws java.io.IOException {
    throw new UnsupportedOperationException("shim");
  }

  public String[] list(String path) throws java.io.IOException { throw new UnsupportedOperationException("shim"); }

  @Override
  public void close() { throw new UnsupportedOperationException("shim"); }
}

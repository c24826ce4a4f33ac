package ai.onnxruntime;

import java.util.EnumSet;

/** Shim: public signatures of ORT's OrtEnvironment.java used by the generated code. */
public class OrtEnvironment implements AutoCloseable {
  private OrtEnvironment() {}

  public static synchronized OrtEnvironment getEnvironment() {
    throw new UnsupportedOperationException("shim");
  }

  public OrtSession createSession(String modelPath, OrtSession.SessionOptions options) throws OrtException {
    throw new UnsupportedOperationException("shim");
  }

  // OrtEnvironment.java: "Must be a direct byte buffer" (heap buffers throw OrtException).
  public OrtSession createSession(java.nio.ByteBuffer modelBuffer, OrtSession.SessionOptions options) throws OrtException {
    throw new UnsupportedOperationException("shim");
  }

  public OrtSession createSession(byte[] modelArray, OrtSession.SessionOptions options) throws OrtException {
    throw new UnsupportedOperationException("shim");
  }

  public OrtSession createSession(byte[] modelArray) throws OrtException {
    throw new UnsupportedOperationException("shim");
  }

  public String getVersion() {
    throw new UnsupportedOperationException("shim");
  }

  public static EnumSet<OrtProvider> getAvailableProviders() {
    throw new UnsupportedOperationException("shim");
  }

  @Override
  public synchronized void close() throws OrtException {
    throw new UnsupportedOperationException("shim");
  }
}

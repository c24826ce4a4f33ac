package ai.onnxruntime;

import java.util.EnumSet;

/** Fake: OrtEnvironment with the shim's (ORT's) public signatures; see tests/fakes/README.md. */
public class OrtEnvironment implements AutoCloseable {
  static {
    // ORT's OrtEnvironment runs OnnxRuntime.init() here, which calls System.loadLibrary on Android.
    FakeOrt.loadNative();
  }

  private static final OrtEnvironment INSTANCE = new OrtEnvironment();

  private OrtEnvironment() {}

  public static synchronized OrtEnvironment getEnvironment() {
    return INSTANCE;
  }

  public OrtSession createSession(String modelPath, OrtSession.SessionOptions options) throws OrtException {
    return FakeOrt.open(options, modelPath);
  }

  public OrtSession createSession(java.nio.ByteBuffer modelBuffer, OrtSession.SessionOptions options) throws OrtException {
    if (!modelBuffer.isDirect()) throw new OrtException("fake: not a direct buffer");
    return FakeOrt.open(options, null);
  }

  public OrtSession createSession(byte[] modelArray, OrtSession.SessionOptions options) throws OrtException {
    return FakeOrt.open(options, null);
  }

  public OrtSession createSession(byte[] modelArray) throws OrtException {
    return FakeOrt.open(new OrtSession.SessionOptions(), null);
  }

  public String getVersion() {
    return "fake";
  }

  public static EnumSet<OrtProvider> getAvailableProviders() {
    EnumSet<OrtProvider> out = EnumSet.noneOf(OrtProvider.class);
    for (String name : System.getProperty("fakeort.providers", "CPU,NNAPI,XNNPACK,QNN").split(",")) {
      if (!name.isEmpty()) out.add(OrtProvider.valueOf(name));
    }
    return out;
  }

  @Override
  public synchronized void close() {}
}

package ai.onnxruntime;

import ai.onnxruntime.providers.NNAPIFlags;
import java.util.EnumSet;
import java.util.Iterator;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/** Shim: public signatures of ORT's OrtSession.java used by the generated code. */
public class OrtSession implements AutoCloseable {
  private OrtSession() {}

  public Set<String> getInputNames() { throw new UnsupportedOperationException("shim"); }
  public Set<String> getOutputNames() { throw new UnsupportedOperationException("shim"); }

  public Result run(Map<String, ? extends OnnxTensorLike> inputs) throws OrtException {
    throw new UnsupportedOperationException("shim");
  }

  public Result run(Map<String, ? extends OnnxTensorLike> inputs, Set<String> requestedOutputs)
      throws OrtException {
    throw new UnsupportedOperationException("shim");
  }

  // Output pinning (microsoft/onnxruntime PR #16835, "[java] Enable output pinning in OrtSession",
  // aed43f42, first released in 1.17.0): pinned outputs are written in place and not owned by the Result.
  public Result run(
      Map<String, ? extends OnnxTensorLike> inputs, Map<String, ? extends OnnxValue> pinnedOutputs)
      throws OrtException {
    throw new UnsupportedOperationException("shim");
  }

  public Result run(
      Map<String, ? extends OnnxTensorLike> inputs,
      Set<String> requestedOutputs,
      Map<String, ? extends OnnxValue> pinnedOutputs)
      throws OrtException {
    throw new UnsupportedOperationException("shim");
  }

  public long getProfilingStartTimeInNs() throws OrtException {
    throw new UnsupportedOperationException("shim");
  }

  public String endProfiling() throws OrtException {
    throw new UnsupportedOperationException("shim");
  }

  @Override
  public void close() throws OrtException {
    throw new UnsupportedOperationException("shim");
  }

  public static class SessionOptions implements AutoCloseable {
    public SessionOptions() {}

    @Override
    public void close() {}

    public void setIntraOpNumThreads(int numThreads) throws OrtException {}
    public void setInterOpNumThreads(int numThreads) throws OrtException {}
    public void addConfigEntry(String configKey, String configValue) throws OrtException {}
    public void addNnapi() throws OrtException {}
    public void addNnapi(EnumSet<NNAPIFlags> flags) throws OrtException {}
    public void addXnnpack(Map<String, String> providerOptions) throws OrtException {}
    // java/src/main/java/ai/onnxruntime/OrtSession.java (d626b568e): extracts the QNN library, then
    // addExecutionProvider("QNN", providerOptions).
    public void addQnn(Map<String, String> providerOptions) throws OrtException {}
    public void enableProfiling(String filePath) throws OrtException {}
    public void disableProfiling() throws OrtException {}
  }

  public static class Result implements AutoCloseable, Iterable<Map.Entry<String, OnnxValue>> {
    Result() {}

    @Override
    public void close() {}

    @Override
    public Iterator<Map.Entry<String, OnnxValue>> iterator() {
      throw new UnsupportedOperationException("shim");
    }

    public OnnxValue get(int index) { throw new UnsupportedOperationException("shim"); }
    public int size() { throw new UnsupportedOperationException("shim"); }
    public Optional<OnnxValue> get(String key) { throw new UnsupportedOperationException("shim"); }
  }
}

package ai.onnxruntime;

import ai.onnxruntime.providers.NNAPIFlags;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/** Fake: OrtSession with the shim's (ORT's) public signatures; see tests/fakes/README.md. */
public class OrtSession implements AutoCloseable {
  static {
    FakeOrt.loadNative();
  }

  OrtSession() {}

  public Set<String> getInputNames() { throw new UnsupportedOperationException("fake"); }
  public Set<String> getOutputNames() { throw new UnsupportedOperationException("fake"); }

  public Result run(Map<String, ? extends OnnxTensorLike> inputs) throws OrtException {
    throw new UnsupportedOperationException("fake");
  }

  public Result run(Map<String, ? extends OnnxTensorLike> inputs, Set<String> requestedOutputs)
      throws OrtException {
    throw new UnsupportedOperationException("fake");
  }

  // Output pinning (microsoft/onnxruntime PR #16835, "[java] Enable output pinning in OrtSession",
  // aed43f42, first released in 1.17.0): pinned outputs are written in place and not owned by the Result.
  public Result run(
      Map<String, ? extends OnnxTensorLike> inputs, Map<String, ? extends OnnxValue> pinnedOutputs)
      throws OrtException {
    throw new UnsupportedOperationException("fake");
  }

  public Result run(
      Map<String, ? extends OnnxTensorLike> inputs,
      Set<String> requestedOutputs,
      Map<String, ? extends OnnxValue> pinnedOutputs)
      throws OrtException {
    throw new UnsupportedOperationException("fake");
  }

  public long getProfilingStartTimeInNs() throws OrtException {
    throw new UnsupportedOperationException("fake");
  }

  public String endProfiling() throws OrtException {
    throw new UnsupportedOperationException("fake");
  }

  @Override
  public void close() throws OrtException {}

  public static class SessionOptions implements AutoCloseable {
    final List<String> providers = new ArrayList<>();
    final Map<String, String> config = new HashMap<>();

    public SessionOptions() {}

    @Override
    public void close() {}

    public void setIntraOpNumThreads(int numThreads) throws OrtException {}
    public void setInterOpNumThreads(int numThreads) throws OrtException {}

    public void addConfigEntry(String configKey, String configValue) throws OrtException {
      config.put(configKey, configValue);
    }

    public void addNnapi() throws OrtException {
      addNnapi(EnumSet.noneOf(NNAPIFlags.class));
    }

    public void addNnapi(EnumSet<NNAPIFlags> flags) throws OrtException {
      FakeOrt.add("NNAPI");
      providers.add("NNAPI");
    }

    public void addXnnpack(Map<String, String> providerOptions) throws OrtException {
      FakeOrt.add("XNNPACK");
      providers.add("XNNPACK");
    }

    public void addQnn(Map<String, String> providerOptions) throws OrtException {
      FakeOrt.add("QNN");
      providers.add("QNN");
    }

    public void enableProfiling(String filePath) throws OrtException {}
    public void disableProfiling() throws OrtException {}
  }

  public static class Result implements AutoCloseable, Iterable<Map.Entry<String, OnnxValue>> {
    Result() {}

    @Override
    public void close() {}

    @Override
    public Iterator<Map.Entry<String, OnnxValue>> iterator() {
      throw new UnsupportedOperationException("fake");
    }

    public OnnxValue get(int index) { throw new UnsupportedOperationException("fake"); }
    public int size() { throw new UnsupportedOperationException("fake"); }
    public Optional<OnnxValue> get(String key) { throw new UnsupportedOperationException("fake"); }
  }
}

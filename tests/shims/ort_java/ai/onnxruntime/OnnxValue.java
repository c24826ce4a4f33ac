package ai.onnxruntime;

/** Shim: ORT's OnnxValue.java interface. */
public interface OnnxValue extends AutoCloseable {
  Object getValue() throws OrtException;

  ValueInfo getInfo();

  @Override
  void close();
}

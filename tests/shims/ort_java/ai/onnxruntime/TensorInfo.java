package ai.onnxruntime;

/** Shim: the part of ORT's TensorInfo.java the generated code uses. */
public class TensorInfo implements ValueInfo {
  public final OnnxJavaType type = OnnxJavaType.UNKNOWN;

  TensorInfo() {}

  public long[] getShape() {
    throw new UnsupportedOperationException("shim");
  }
}

package ai.onnxruntime;

/** Shim: ORT's OnnxTensorLike.java (getInfo narrowed to TensorInfo). */
public abstract class OnnxTensorLike implements OnnxValue {
  OnnxTensorLike() {}

  @Override
  public TensorInfo getInfo() {
    throw new UnsupportedOperationException("shim");
  }
}

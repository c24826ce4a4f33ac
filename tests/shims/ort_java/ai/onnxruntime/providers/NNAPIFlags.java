package ai.onnxruntime.providers;

/** Shim: ORT's providers/NNAPIFlags.java (values as in nnapi_provider_factory.h). */
public enum NNAPIFlags implements OrtFlags {
  USE_FP16(1),
  USE_NCHW(2),
  CPU_DISABLED(4),
  CPU_ONLY(8);

  public final int value;

  NNAPIFlags(int value) {
    this.value = value;
  }

  @Override
  public int getValue() {
    return value;
  }
}

package ai.onnxruntime.providers;

/** Shim: ORT's providers/OrtFlags.java. */
public interface OrtFlags {
  int getValue();
}

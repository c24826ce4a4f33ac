package ai.onnxruntime;

/** Shim: ORT's ValueInfo marker interface. */
public interface ValueInfo {}

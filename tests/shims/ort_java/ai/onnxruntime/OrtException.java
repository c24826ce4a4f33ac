package ai.onnxruntime;

/** Shim: signature from ORT's OrtException.java (checked exception). */
public class OrtException extends Exception {
  public OrtException(String message) {
    super(message);
  }
}

package androidx.camera.core;

/** Shim: androidx.camera.core.ImageAnalysis (its Analyzer interface and output-format constants). */
public final class ImageAnalysis {
  private ImageAnalysis() {}

  public static final int OUTPUT_IMAGE_FORMAT_YUV_420_888 = 1;
  public static final int OUTPUT_IMAGE_FORMAT_RGBA_8888 = 2;
  public static final int STRATEGY_KEEP_ONLY_LATEST = 0;

  public interface Analyzer {
    void analyze(ImageProxy image);
  }
}

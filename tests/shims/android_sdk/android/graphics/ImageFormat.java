package android.graphics;

/** Shim: android.graphics.ImageFormat (the constant used; value from the API reference). */
public class ImageFormat {
  public static final int YUV_420_888 = 0x23;
}

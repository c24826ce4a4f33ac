package android.graphics;

/** Shim: android.graphics.PixelFormat (the constant used; value from the API reference). */
public class PixelFormat {
  public static final int RGBA_8888 = 1;
}

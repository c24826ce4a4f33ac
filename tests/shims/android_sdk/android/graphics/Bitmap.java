package android.graphics;

/** Shim: android.graphics.Bitmap (signatures only). */
public final class Bitmap {
  private Bitmap() {}

  public enum Config { ALPHA_8, RGB_565, ARGB_4444, ARGB_8888, RGBA_F16, HARDWARE, RGBA_1010102 }

  public int getWidth() { throw new UnsupportedOperationException("shim"); }

  public int getHeight() { throw new UnsupportedOperationException("shim"); }

  public Config getConfig() { throw new UnsupportedOperationException("shim"); }

  public Bitmap copy(Config config, boolean isMutable) { throw new UnsupportedOperationException("shim"); }

  public void getPixels(int[] pixels, int offset, int stride, int x, int y, int width, int height) {
    throw new UnsupportedOperationException("shim");
  }

  public static Bitmap createBitmap(int width, int height, Config config) { throw new UnsupportedOperationException("shim"); }

  public void setPixels(int[] pixels, int offset, int stride, int x, int y, int width, int height) {
    throw new UnsupportedOperationException("shim");
  }

  public void recycle() { throw new UnsupportedOperationException("shim"); }
}

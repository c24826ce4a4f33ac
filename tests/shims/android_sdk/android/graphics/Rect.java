package android.graphics;

/** Shim: android.graphics.Rect (public int fields left, top, right, bottom; signatures only). */
public final class Rect {
  public int left;
  public int top;
  public int right;
  public int bottom;

  public Rect() {}

  public Rect(int left, int top, int right, int bottom) {
    throw new UnsupportedOperationException("shim");
  }

  public final int width() { throw new UnsupportedOperationException("shim"); }

  public final int height() { throw new UnsupportedOperationException("shim"); }
}

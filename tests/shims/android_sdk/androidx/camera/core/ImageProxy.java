package androidx.camera.core;

import android.graphics.Rect;
import java.nio.ByteBuffer;

/** Shim: androidx.camera.core.ImageProxy (the members CameraX declares and the generated code uses). */
public interface ImageProxy extends AutoCloseable {
  interface PlaneProxy {
    ByteBuffer getBuffer();

    int getPixelStride();

    int getRowStride();
  }

  @Override
  void close();

  Rect getCropRect();

  void setCropRect(Rect rect);

  int getFormat();

  int getHeight();

  int getWidth();

  PlaneProxy[] getPlanes();

  ImageInfo getImageInfo();
}

package androidx.camera.core;

/** Shim: androidx.camera.core.ImageInfo (the members the generated code uses). */
public interface ImageInfo {
  long getTimestamp();

  int getRotationDegrees();
}

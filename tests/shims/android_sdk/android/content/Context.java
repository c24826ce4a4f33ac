package android.content;

/** Shim: android.content.Context (signatures only). */
public abstract class Context {
  public abstract android.content.res.AssetManager getAssets();
  public abstract android.content.pm.ApplicationInfo getApplicationInfo();
  public abstract java.io.File getFilesDir();
  public java.io.File getExternalFilesDir(String type) { throw new UnsupportedOperationException("shim"); }  // abstract in the SDK; concrete here so JVM fakes need not override it
}

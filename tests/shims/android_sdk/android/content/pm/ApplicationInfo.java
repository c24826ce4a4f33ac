package android.content.pm;

/** Shim: android.content.pm.ApplicationInfo (the fields the generated code reads). */
public class ApplicationInfo {
  public String nativeLibraryDir;
}

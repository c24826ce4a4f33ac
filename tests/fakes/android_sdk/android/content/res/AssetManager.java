package android.content.res;

import java.io.File;
import java.io.FileInputStream;
import java.io.FileNotFoundException;

/** Fake: android.content.res.AssetManager reading -Dfakeandroid.assets (see tests/fakes/README.md). */
public final class AssetManager implements AutoCloseable {
  public AssetManager() {}

  public java.io.InputStream open(String fileName) throws java.io.IOException {
    return new FileInputStream(new File(System.getProperty("fakeandroid.assets"), fileName));
  }

  public AssetFileDescriptor openFd(String fileName) throws java.io.IOException {
    throw new FileNotFoundException("This file can not be opened as a file descriptor; it is probably compressed");
  }

  public String[] list(String path) throws java.io.IOException {
    return new File(System.getProperty("fakeandroid.assets"), path).list();
  }

  @Override
  public void close() {}
}

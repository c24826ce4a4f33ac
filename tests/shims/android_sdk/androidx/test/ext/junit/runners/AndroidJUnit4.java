package androidx.test.ext.junit.runners;

/** Shim: androidx.test.ext.junit.runners.AndroidJUnit4 (a JUnit runner class; signatures only). */
public final class AndroidJUnit4 {
  private AndroidJUnit4() {}
}

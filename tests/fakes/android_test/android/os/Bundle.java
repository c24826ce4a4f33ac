package android.os;

/** Fake: android.os.Bundle, the string values only. */
public final class Bundle {
  private final java.util.HashMap<String, String> values = new java.util.HashMap<>();

  public Bundle() {}

  public String getString(String key) { return values.get(key); }

  public void putString(String key, String value) { values.put(key, value); }
}

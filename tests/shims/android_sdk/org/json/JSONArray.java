package org.json;

/** Shim: org.json.JSONArray (Android platform; signatures only). */
public class JSONArray {
  public int length() { throw new UnsupportedOperationException("shim"); }

  public JSONObject getJSONObject(int index) throws JSONException { throw new UnsupportedOperationException("shim"); }
  public long getLong(int index) throws JSONException { throw new UnsupportedOperationException("shim"); }
}

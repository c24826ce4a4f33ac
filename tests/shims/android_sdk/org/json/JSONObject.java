package org.json;

/** Shim: org.json.JSONObject (Android platform; signatures only). */
public class JSONObject {
  public JSONObject(String json) throws JSONException { throw new UnsupportedOperationException("shim"); }

  public JSONArray getJSONArray(String name) throws JSONException { throw new UnsupportedOperationException("shim"); }

  public String getString(String name) throws JSONException { throw new UnsupportedOperationException("shim"); }

  public int getInt(String name) throws JSONException { throw new UnsupportedOperationException("shim"); }

  public double getDouble(String name) throws JSONException { throw new UnsupportedOperationException("shim"); }
}

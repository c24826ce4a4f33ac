package org.json;

/** Shim: org.json.JSONException (Android platform). */
public class JSONException extends RuntimeException {
  public JSONException(String message) { super(message); }
}

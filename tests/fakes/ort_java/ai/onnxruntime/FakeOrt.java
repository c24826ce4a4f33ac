package ai.onnxruntime;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/** The fakes' shared behaviour (package-private: not part of ORT's API). */
final class FakeOrt {
  private FakeOrt() {}

  static void loadNative() {
    if ("1".equals(System.getProperty("fakeort.nativeMissing"))) {
      throw new UnsatisfiedLinkError("dlopen failed: library \"libonnxruntime.so\" not found");
    }
  }

  static boolean listed(String property, String provider) {
    return Arrays.asList(System.getProperty(property, "").split(",")).contains(provider);
  }

  static void add(String provider) throws OrtException {
    if (listed("fakeort.failAdd", provider)) {
      throw new OrtException("fake: " + provider + " failed to initialise");
    }
  }

  /** Session creation as ORT does it, for the behaviours the README lists. */
  static OrtSession open(OrtSession.SessionOptions options, String modelPath) throws OrtException {
    boolean qnnNoNode = "1".equals(System.getProperty("fakeort.qnnNoNode"));
    List<String> holding = new ArrayList<>();
    for (String p : options.providers) {
      if (listed("fakeort.failCreate", p)) throw new OrtException("fake: " + p + " failed to compile the graph");
      if (!(p.equals("QNN") && qnnNoNode)) holding.add(p);
    }
    if (modelPath != null && !holding.contains("QNN")) {
      // A QNN context model holds EPContext nodes: without QNN no provider has a kernel for them.
      throw new OrtException("fake: Could not find an implementation for EPContext(1) node");
    }
    if ("1".equals(options.config.get("session.disable_cpu_ep_fallback")) && holding.isEmpty()) {
      throw new OrtException("fake: This session contains graph nodes that are assigned to the default CPU EP, "
          + "but fallback to CPU EP has been explicitly disabled by the user.");
    }
    if (modelPath == null && "1".equals(options.config.get("ep.context_enable")) && holding.contains("QNN")) {
      File out = new File(options.config.get("ep.context_file_path"));
      if (out.exists()) throw new OrtException("fake: the EP context output file already exists");
      try {
        Files.write(out.toPath(), new byte[] {1});
      } catch (IOException e) {
        throw new OrtException("fake: " + e);
      }
    }
    holding.add("CPU");
    String done = System.getProperty("fakeort.sessions", "");
    System.setProperty("fakeort.sessions", (done.isEmpty() ? "" : done + ";") + String.join(",", holding));
    return new OrtSession();
  }
}

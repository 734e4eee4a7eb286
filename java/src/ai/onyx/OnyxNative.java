/* Loads the JNI library (libonyx_jni.so, which links libonyx) once for the
 * process and checks that libonyx serves the C API this binding was built for. */
package ai.onyx;

final class OnyxNative {
  /**
   * System property naming libonyx_jni.so by its full path; without it the
   *  library is found on java.library.path.
   */
  static final String LIBRARY_PATH_PROPERTY = "onyx.jni.library";

  private static String version;

  private OnyxNative() {}

  /** Loads the library on first use; later calls return at once. */
  static synchronized void load() {
    if (version != null)
      return;
    String path = System.getProperty(LIBRARY_PATH_PROPERTY);
    if (path != null && !path.isEmpty()) {
      System.load(path);
    } else {
      System.loadLibrary("onyx_jni");
    }
    try {
      version = initialize();
    } catch (OnyxException e) {
      UnsatisfiedLinkError error = new UnsatisfiedLinkError(e.getMessage());
      error.initCause(e);
      throw error;
    }
  }

  /** libonyx's version ("0.1.0"). */
  static String version() {
    load();
    return version;
  }

  private static native String initialize() throws OnyxException;

  static native String buildInfo();

  static native String[] availableProviders() throws OnyxException;
}

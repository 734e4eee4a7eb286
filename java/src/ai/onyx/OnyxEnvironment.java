/* The process's onyx environment (onnxruntime's OrtEnvironment): where
 * sessions are made. */
package ai.onyx;

import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashSet;
import java.util.Set;

/**
 * The one environment of the process, as onnxruntime's: {@link
 * #getEnvironment()} makes it on first use and returns the same object
 * afterwards (the logging level and name of the first call stay). It lives
 * as long as the process; {@link #close()} does nothing.
 */
public final class OnyxEnvironment implements AutoCloseable {
  static {
    OnyxNative.load();
  }

  public static final String DEFAULT_NAME = "onyx-java";

  private static OnyxEnvironment instance;

  final long handle;
  private final String name;
  private final OnyxLoggingLevel level;

  private OnyxEnvironment(OnyxLoggingLevel level, String name) throws OnyxException {
    this.handle = createEnv(level.getValue(), name);
    this.name = name;
    this.level = level;
  }

  public static OnyxEnvironment getEnvironment() {
    return getEnvironment(OnyxLoggingLevel.ONYX_LOGGING_LEVEL_WARNING, DEFAULT_NAME);
  }

  public static OnyxEnvironment getEnvironment(String name) {
    return getEnvironment(OnyxLoggingLevel.ONYX_LOGGING_LEVEL_WARNING, name);
  }

  public static OnyxEnvironment getEnvironment(OnyxLoggingLevel level) {
    return getEnvironment(level, DEFAULT_NAME);
  }

  /** The environment; made with `level` and `name` when this is the first call. */
  public static synchronized OnyxEnvironment getEnvironment(OnyxLoggingLevel level, String name) {
    if (instance == null) {
      try {
        instance = new OnyxEnvironment(level, name);
      } catch (OnyxException e) {
        throw new IllegalStateException("cannot create the onyx environment: " + e.getMessage(), e);
      }
    }
    return instance;
  }

  public String getName() {
    return name;
  }

  public OnyxLoggingLevel getLoggingLevel() {
    return level;
  }

  public OnyxSession createSession(String modelPath) throws OnyxException {
    return createSession(modelPath, null);
  }

  /** A session for the model file at `modelPath`; `options` may be null. */
  public OnyxSession createSession(String modelPath, OnyxSession.SessionOptions options) throws OnyxException {
    return new OnyxSession(this, modelPath, options);
  }

  public OnyxSession createSession(byte[] model) throws OnyxException {
    return createSession(model, null);
  }

  /** A session for a model given as its bytes (the array is not kept). */
  public OnyxSession createSession(byte[] model, OnyxSession.SessionOptions options) throws OnyxException {
    return new OnyxSession(this, model, options);
  }

  /** libonyx's version. */
  public static String getVersion() {
    return OnyxNative.version();
  }

  /** How libonyx was built (its version, compiler, options). */
  public static String getBuildInfo() {
    OnyxNative.load();
    return OnyxNative.buildInfo();
  }

  /** The execution providers this libonyx can create, by name ("CPUExecutionProvider", ...). */
  public static Set<String> getAvailableProviders() throws OnyxException {
    OnyxNative.load();
    return Collections.unmodifiableSet(new LinkedHashSet<>(Arrays.asList(OnyxNative.availableProviders())));
  }

  /** Does nothing: the environment lives as long as the process. */
  @Override
  public void close() {}

  @Override
  public String toString() {
    return "OnyxEnvironment(name=" + name + ", level=" + level + ")";
  }

  // The handle is never released: the environment lives as long as the process.
  private static native long createEnv(int level, String name) throws OnyxException;
}

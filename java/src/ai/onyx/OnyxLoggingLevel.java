/* The C API's logging levels (onnxruntime's OrtLoggingLevel). */
package ai.onyx;

public enum OnyxLoggingLevel {
  ONYX_LOGGING_LEVEL_VERBOSE(0),
  ONYX_LOGGING_LEVEL_INFO(1),
  ONYX_LOGGING_LEVEL_WARNING(2),
  ONYX_LOGGING_LEVEL_ERROR(3),
  ONYX_LOGGING_LEVEL_FATAL(4);

  private final int value;

  OnyxLoggingLevel(int value) {
    this.value = value;
  }

  public int getValue() {
    return value;
  }
}

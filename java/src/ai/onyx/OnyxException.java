/* The error of a call into onyx: the C API status's code and message. */
package ai.onyx;

/**
 * An error from onyx. {@link #getMessage()} is the C API's message as it
 * is (it names the model, node and input concerned); {@link #getCode()} its
 * code, onnxruntime's {@code OrtErrorCode} with Ort turned into Onyx.
 */
public class OnyxException extends Exception {
  private static final long serialVersionUID = 1L;

  /** The C API's OnyxErrorCode values. */
  public enum OnyxErrorCode {
    ONYX_OK(0),
    ONYX_FAIL(1),
    ONYX_INVALID_ARGUMENT(2),
    ONYX_NO_SUCHFILE(3),
    ONYX_NO_MODEL(4),
    ONYX_ENGINE_ERROR(5),
    ONYX_RUNTIME_EXCEPTION(6),
    ONYX_INVALID_PROTOBUF(7),
    ONYX_MODEL_LOADED(8),
    ONYX_NOT_IMPLEMENTED(9),
    ONYX_INVALID_GRAPH(10),
    ONYX_EP_FAIL(11);

    private final int value;

    OnyxErrorCode(int value) {
      this.value = value;
    }

    /** The C enumeration's value. */
    public int getValue() {
      return value;
    }

    /** The code of a C value; ONYX_FAIL for one this binding does not know. */
    public static OnyxErrorCode forValue(int value) {
      for (OnyxErrorCode code : values()) {
        if (code.value == value)
          return code;
      }
      return ONYX_FAIL;
    }
  }

  private final OnyxErrorCode code;

  public OnyxException(String message) {
    this(OnyxErrorCode.ONYX_FAIL, message);
  }

  public OnyxException(OnyxErrorCode code, String message) {
    super(message);
    this.code = code;
  }

  /** Made by the native code from a status. */
  OnyxException(int code, String message) {
    this(OnyxErrorCode.forValue(code), message);
  }

  public OnyxErrorCode getCode() {
    return code;
  }

  @Override
  public String toString() {
    return "OnyxException(" + code + "): " + getMessage();
  }
}

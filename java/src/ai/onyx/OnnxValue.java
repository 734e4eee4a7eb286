/* A value of onyx's: a tensor, a sequence or a map (onnxruntime's OnnxValue). */
package ai.onyx;

public interface OnnxValue extends AutoCloseable {
  /** The C API's ONNXType values. */
  enum OnnxValueType {
    ONNX_TYPE_UNKNOWN(0),
    ONNX_TYPE_TENSOR(1),
    ONNX_TYPE_SEQUENCE(2),
    ONNX_TYPE_MAP(3),
    ONNX_TYPE_OPAQUE(4),
    ONNX_TYPE_SPARSETENSOR(5),
    ONNX_TYPE_OPTIONAL(6);

    private final int value;

    OnnxValueType(int value) {
      this.value = value;
    }

    public int getValue() {
      return value;
    }

    public static OnnxValueType forValue(int value) {
      for (OnnxValueType type : values()) {
        if (type.value == value)
          return type;
      }
      return ONNX_TYPE_UNKNOWN;
    }
  }

  /**
   * The value as Java objects (a copy): a tensor as a multi-dimensional
   *  array (or a boxed scalar for rank 0), a sequence as a List, a map as a Map.
   */
  Object getValue() throws OnyxException;

  ValueInfo getInfo();

  OnnxValueType getType();

  boolean isClosed();

  /** Frees the native value; later calls do nothing. */
  @Override void close();
}

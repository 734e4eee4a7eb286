/* A tensor's element type and shape (onnxruntime's TensorInfo). */
package ai.onyx;

import java.util.Arrays;

public final class TensorInfo implements ValueInfo {
  /** ONNX's element types, numbered as TensorProto.DataType (the C API's ONNXTensorElementDataType). */
  public enum OnnxTensorType {
    ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED(0, 0),
    ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT(1, 4),
    ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8(2, 1),
    ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8(3, 1),
    ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT16(4, 2),
    ONNX_TENSOR_ELEMENT_DATA_TYPE_INT16(5, 2),
    ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32(6, 4),
    ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64(7, 8),
    ONNX_TENSOR_ELEMENT_DATA_TYPE_STRING(8, 0),
    ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL(9, 1),
    ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16(10, 2),
    ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE(11, 8),
    ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT32(12, 4),
    ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT64(13, 8),
    ONNX_TENSOR_ELEMENT_DATA_TYPE_COMPLEX64(14, 8),
    ONNX_TENSOR_ELEMENT_DATA_TYPE_COMPLEX128(15, 16),
    ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16(16, 2),
    ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E4M3FN(17, 1),
    ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E4M3FNUZ(18, 1),
    ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E5M2(19, 1),
    ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E5M2FNUZ(20, 1),
    // 4-bit types: onyx's memory holds one element per byte.
    ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT4(21, 1),
    ONNX_TENSOR_ELEMENT_DATA_TYPE_INT4(22, 1),
    ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT4E2M1(23, 1);

    public final int value;
    /** Bytes per element in memory; 0 for strings and UNDEFINED. */
    public final int size;

    OnnxTensorType(int value, int size) {
      this.value = value;
      this.size = size;
    }

    public static OnnxTensorType forValue(int value) {
      for (OnnxTensorType type : values()) {
        if (type.value == value)
          return type;
      }
      return ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
    }
  }

  /** The Java type of the elements; UNKNOWN where Java has none. */
  public final OnnxJavaType type;
  /** The ONNX element type. */
  public final OnnxTensorType onnxType;

  private final long[] shape;
  private final String[] dimensionNames;

  /**
   * Made by the native code: `shape` has -1 for a dimension of unknown
   *  size, `dimensionNames` "" where a dimension has no symbol.
   */
  TensorInfo(int elementType, long[] shape, String[] dimensionNames) {
    this(OnnxTensorType.forValue(elementType), shape, dimensionNames);
  }

  TensorInfo(OnnxTensorType onnxType, long[] shape, String[] dimensionNames) {
    this.onnxType = onnxType;
    this.type = OnnxJavaType.of(onnxType);
    this.shape = shape.clone();
    this.dimensionNames = dimensionNames.clone();
  }

  /** A tensor of `shape` made by this binding (no symbolic dimensions). */
  static TensorInfo of(OnnxTensorType onnxType, long[] shape) {
    String[] names = new String[shape.length];
    Arrays.fill(names, "");
    return new TensorInfo(onnxType, shape, names);
  }

  /** The dimensions; -1 where the size is unknown (a symbolic dimension of a model's input or output). */
  public long[] getShape() {
    return shape.clone();
  }

  /** Each dimension's symbol ("batch"), "" where it has none. */
  public String[] getDimensionNames() {
    return dimensionNames.clone();
  }

  public int rank() {
    return shape.length;
  }

  public boolean isScalar() {
    return shape.length == 0;
  }

  /** The element count; -1 when a dimension is unknown. */
  public long getNumElements() {
    long count = 1;
    for (long d : shape) {
      if (d < 0)
        return -1;
      count *= d;
    }
    return count;
  }

  @Override
  public String toString() {
    StringBuilder text = new StringBuilder("TensorInfo(type=").append(onnxType).append(", shape=[");
    for (int i = 0; i < shape.length; ++i) {
      if (i > 0)
        text.append(", ");
      text.append(shape[i] < 0 && !dimensionNames[i].isEmpty() ? dimensionNames[i] : Long.toString(shape[i]));
    }
    return text.append("])").toString();
  }
}

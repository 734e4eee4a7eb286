/* The Java type a tensor's elements are read and written as (onnxruntime's
 * OnnxJavaType, with onyx's unsigned types added). */
package ai.onyx;

public enum OnnxJavaType {
  FLOAT(1, float.class, 4),
  DOUBLE(2, double.class, 8),
  INT8(3, byte.class, 1),
  INT16(4, short.class, 2),
  INT32(5, int.class, 4),
  INT64(6, long.class, 8),
  BOOL(7, boolean.class, 1),
  STRING(8, String.class, 4),
  UINT8(9, byte.class, 1),
  /** IEEE half floats: written as their bits (ShortBuffer), read by getValue as float. */
  FLOAT16(10, short.class, 2),
  /** bfloat16: written as their bits (ShortBuffer), read by getValue as float. */
  BFLOAT16(11, short.class, 2),
  /** Unsigned types travel as the signed Java type of their size, bits unchanged. */
  UINT16(12, short.class, 2),
  UINT32(13, int.class, 4),
  UINT64(14, long.class, 8),
  UNKNOWN(0, Object.class, 0);

  public final int value;
  public final Class<?> clazz;
  /** Bytes per element in a buffer (0 for UNKNOWN; STRING has no buffer). */
  public final int size;

  OnnxJavaType(int value, Class<?> clazz, int size) {
    this.value = value;
    this.clazz = clazz;
    this.size = size;
  }

  /** The Java type of an ONNX element type; UNKNOWN where Java has none (complex, float8, 4-bit). */
  public static OnnxJavaType of(TensorInfo.OnnxTensorType type) {
    switch (type) {
      case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT:
        return FLOAT;
      case ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE:
        return DOUBLE;
      case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8:
        return INT8;
      case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT16:
        return INT16;
      case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32:
        return INT32;
      case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64:
        return INT64;
      case ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL:
        return BOOL;
      case ONNX_TENSOR_ELEMENT_DATA_TYPE_STRING:
        return STRING;
      case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8:
        return UINT8;
      case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16:
        return FLOAT16;
      case ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16:
        return BFLOAT16;
      case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT16:
        return UINT16;
      case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT32:
        return UINT32;
      case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT64:
        return UINT64;
      default:
        return UNKNOWN;
    }
  }

  /** The ONNX element type a tensor of this Java type is made with. */
  public TensorInfo.OnnxTensorType onnxType() {
    switch (this) {
      case FLOAT:
        return TensorInfo.OnnxTensorType.ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT;
      case DOUBLE:
        return TensorInfo.OnnxTensorType.ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE;
      case INT8:
        return TensorInfo.OnnxTensorType.ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8;
      case INT16:
        return TensorInfo.OnnxTensorType.ONNX_TENSOR_ELEMENT_DATA_TYPE_INT16;
      case INT32:
        return TensorInfo.OnnxTensorType.ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32;
      case INT64:
        return TensorInfo.OnnxTensorType.ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64;
      case BOOL:
        return TensorInfo.OnnxTensorType.ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL;
      case STRING:
        return TensorInfo.OnnxTensorType.ONNX_TENSOR_ELEMENT_DATA_TYPE_STRING;
      case UINT8:
        return TensorInfo.OnnxTensorType.ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8;
      case FLOAT16:
        return TensorInfo.OnnxTensorType.ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16;
      case BFLOAT16:
        return TensorInfo.OnnxTensorType.ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16;
      case UINT16:
        return TensorInfo.OnnxTensorType.ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT16;
      case UINT32:
        return TensorInfo.OnnxTensorType.ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT32;
      case UINT64:
        return TensorInfo.OnnxTensorType.ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT64;
      default:
        return TensorInfo.OnnxTensorType.ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
    }
  }
}

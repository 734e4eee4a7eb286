/* Java's multi-dimensional arrays to and from a tensor's flat, row-major
 * memory (the copies of OnnxTensor.createTensor(env, Object) and getValue). */
package ai.onyx;

import java.lang.reflect.Array;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

final class TensorArrays {
  private TensorArrays() {}

  /** The array's element class after every array level (float for float[][]). */
  static Class<?> elementClass(Object array) {
    Class<?> c = array.getClass();
    while (c.isArray()) c = c.getComponentType();
    return c;
  }

  /**
   * The shape of a rectangular array: its length at each level. Below a
   *  level of length 0 the dimensions are 0 (there is no element to measure).
   */
  static long[] shapeOf(Object array) throws OnyxException {
    int rank = 0;
    for (Class<?> c = array.getClass(); c.isArray(); c = c.getComponentType()) ++rank;
    long[] shape = new long[rank];
    Object level = array;
    for (int d = 0; d < rank; ++d) {
      int length = Array.getLength(level);
      shape[d] = length;
      if (length == 0)
        break;
      if (d + 1 < rank) {
        level = Array.get(level, 0);
        if (level == null)
          throw invalid("the array has a null sub-array at depth " + (d + 1));
      }
    }
    return shape;
  }

  /** The Java type of an array's elements; UNKNOWN for classes no tensor holds. */
  static OnnxJavaType javaTypeOf(Class<?> element) {
    if (element == float.class || element == Float.class)
      return OnnxJavaType.FLOAT;
    if (element == double.class || element == Double.class)
      return OnnxJavaType.DOUBLE;
    if (element == byte.class || element == Byte.class)
      return OnnxJavaType.INT8;
    if (element == short.class || element == Short.class)
      return OnnxJavaType.INT16;
    if (element == int.class || element == Integer.class)
      return OnnxJavaType.INT32;
    if (element == long.class || element == Long.class)
      return OnnxJavaType.INT64;
    if (element == boolean.class || element == Boolean.class)
      return OnnxJavaType.BOOL;
    if (element == String.class)
      return OnnxJavaType.STRING;
    return OnnxJavaType.UNKNOWN;
  }

  /**
   * A direct, native-order buffer holding the primitive array's elements
   *  row-major (a boxed scalar gives one element).
   */
  static ByteBuffer flatten(Object data, long[] shape, OnnxJavaType type) throws OnyxException {
    long count = elementCount(shape);
    if (count * type.size > Integer.MAX_VALUE)
      throw invalid("the array is too large for one buffer");
    ByteBuffer out = ByteBuffer.allocateDirect((int) (count * type.size)).order(ByteOrder.nativeOrder());
    if (shape.length == 0) {
      putScalar(data, out, type);
    } else if (count > 0) {
      flattenInto(data, 0, shape, out, type);
    }
    out.rewind();
    return out;
  }

  private static void flattenInto(Object level, int depth, long[] shape, ByteBuffer out, OnnxJavaType type)
      throws OnyxException {
    if (level == null)
      throw invalid("the array has a null sub-array at depth " + depth);
    int length = Array.getLength(level);
    if (length != shape[depth]) {
      throw invalid(
          "the array is not rectangular: length " + length + " at depth " + depth + ", expected " + shape[depth]);
    }
    if (depth + 1 < shape.length) {
      for (int i = 0; i < length; ++i) flattenInto(Array.get(level, i), depth + 1, shape, out, type);
      return;
    }
    int start = out.position();
    switch (type) {
      case FLOAT:
        out.asFloatBuffer().put((float[]) level);
        break;
      case DOUBLE:
        out.asDoubleBuffer().put((double[]) level);
        break;
      case INT8:
        out.put((byte[]) level);
        return;
      case INT16:
        out.asShortBuffer().put((short[]) level);
        break;
      case INT32:
        out.asIntBuffer().put((int[]) level);
        break;
      case INT64:
        out.asLongBuffer().put((long[]) level);
        break;
      case BOOL:
        for (boolean b : (boolean[]) level) out.put((byte) (b ? 1 : 0));
        return;
      default:
        throw invalid("cannot make a tensor of " + type + " from an array");
    }
    out.position(start + length * type.size);
  }

  private static void putScalar(Object value, ByteBuffer out, OnnxJavaType type) throws OnyxException {
    switch (type) {
      case FLOAT:
        out.putFloat((Float) value);
        break;
      case DOUBLE:
        out.putDouble((Double) value);
        break;
      case INT8:
        out.put((Byte) value);
        break;
      case INT16:
        out.putShort((Short) value);
        break;
      case INT32:
        out.putInt((Integer) value);
        break;
      case INT64:
        out.putLong((Long) value);
        break;
      case BOOL:
        out.put((byte) ((Boolean) value ? 1 : 0));
        break;
      default:
        throw invalid("cannot make a tensor of " + type + " from a scalar");
    }
  }

  /** The strings of a String array (any rank), row-major. */
  static String[] flattenStrings(Object data, long[] shape) throws OnyxException {
    long count = elementCount(shape);
    String[] out = new String[(int) count];
    if (count > 0)
      flattenStringsInto(data, 0, shape, out, new int[] {0});
    return out;
  }

  private static void flattenStringsInto(Object level, int depth, long[] shape, String[] out, int[] next)
      throws OnyxException {
    if (level == null)
      throw invalid("the array has a null sub-array at depth " + depth);
    int length = Array.getLength(level);
    if (length != shape[depth]) {
      throw invalid(
          "the array is not rectangular: length " + length + " at depth " + depth + ", expected " + shape[depth]);
    }
    for (int i = 0; i < length; ++i) {
      Object element = Array.get(level, i);
      if (depth + 1 < shape.length) {
        flattenStringsInto(element, depth + 1, shape, out, next);
      } else {
        if (element == null)
          throw invalid("string " + next[0] + " is null");
        out[next[0]++] = (String) element;
      }
    }
  }

  /**
   * The tensor's elements (native-order `bytes`) as an array of `shape`
   *  (a boxed scalar for rank 0). FLOAT16 and BFLOAT16 become float.
   */
  static Object toArray(ByteBuffer bytes, OnnxJavaType type, long[] shape) throws OnyxException {
    ByteBuffer in = bytes.duplicate().order(ByteOrder.nativeOrder());
    if (shape.length == 0)
      return readScalar(in, type);
    Class<?> leaf = type == OnnxJavaType.FLOAT16 || type == OnnxJavaType.BFLOAT16 ? float.class : type.clazz;
    Object array = Array.newInstance(leaf, intDims(shape));
    fill(array, 0, shape, in, type);
    return array;
  }

  private static void fill(Object level, int depth, long[] shape, ByteBuffer in, OnnxJavaType type) {
    int length = Array.getLength(level);
    if (depth + 1 < shape.length) {
      for (int i = 0; i < length; ++i) fill(Array.get(level, i), depth + 1, shape, in, type);
      return;
    }
    int start = in.position();
    switch (type) {
      case FLOAT:
        in.asFloatBuffer().get((float[]) level);
        break;
      case DOUBLE:
        in.asDoubleBuffer().get((double[]) level);
        break;
      case INT8:
      case UINT8:
        in.get((byte[]) level);
        return;
      case INT16:
      case UINT16:
        in.asShortBuffer().get((short[]) level);
        break;
      case INT32:
      case UINT32:
        in.asIntBuffer().get((int[]) level);
        break;
      case INT64:
      case UINT64:
        in.asLongBuffer().get((long[]) level);
        break;
      case BOOL: {
        boolean[] out = (boolean[]) level;
        for (int i = 0; i < length; ++i) out[i] = in.get() != 0;
        return;
      }
      case FLOAT16:
      case BFLOAT16: {
        float[] out = (float[]) level;
        for (int i = 0; i < length; ++i) {
          short bits = in.getShort();
          out[i] = type == OnnxJavaType.FLOAT16 ? halfToFloat(bits) : bfloat16ToFloat(bits);
        }
        return;
      }
      default:
        throw new IllegalStateException("no array for " + type);
    }
    in.position(start + length * type.size);
  }

  private static Object readScalar(ByteBuffer in, OnnxJavaType type) throws OnyxException {
    switch (type) {
      case FLOAT:
        return in.getFloat();
      case DOUBLE:
        return in.getDouble();
      case INT8:
      case UINT8:
        return in.get();
      case INT16:
      case UINT16:
        return in.getShort();
      case INT32:
      case UINT32:
        return in.getInt();
      case INT64:
      case UINT64:
        return in.getLong();
      case BOOL:
        return in.get() != 0;
      case FLOAT16:
        return halfToFloat(in.getShort());
      case BFLOAT16:
        return bfloat16ToFloat(in.getShort());
      default:
        throw invalid("no Java value for a tensor of " + type);
    }
  }

  /** Strings in row-major order as a String array of `shape`. */
  static Object reshapeStrings(String[] flat, long[] shape) throws OnyxException {
    if (shape.length == 0)
      return flat[0];
    Object array = Array.newInstance(String.class, intDims(shape));
    if (flat.length > 0)
      reshapeInto(array, 0, shape, flat, new int[] {0});
    return array;
  }

  private static void reshapeInto(Object level, int depth, long[] shape, String[] flat, int[] next) {
    int length = Array.getLength(level);
    for (int i = 0; i < length; ++i) {
      if (depth + 1 < shape.length) {
        reshapeInto(Array.get(level, i), depth + 1, shape, flat, next);
      } else {
        Array.set(level, i, flat[next[0]++]);
      }
    }
  }

  /** IEEE 754 binary16 to float, exactly (every half is a float). */
  static float halfToFloat(short half) {
    int bits = half & 0xffff;
    int sign = (bits & 0x8000) << 16;
    int exponent = (bits >>> 10) & 0x1f;
    int mantissa = bits & 0x3ff;
    if (exponent == 0x1f)
      return Float.intBitsToFloat(sign | 0x7f800000 | (mantissa << 13));
    if (exponent == 0) {
      float magnitude = mantissa * 0x1p-24f; // subnormal (or zero): mantissa * 2^-24
      return sign != 0 ? -magnitude : magnitude;
    }
    return Float.intBitsToFloat(sign | ((exponent + 112) << 23) | (mantissa << 13));
  }

  /** bfloat16 is a float's upper 16 bits. */
  static float bfloat16ToFloat(short bits) {
    return Float.intBitsToFloat((bits & 0xffff) << 16);
  }

  /** The product of `shape`; an InvalidArgument for a negative dimension or an overflow. */
  static long elementCount(long[] shape) throws OnyxException {
    long count = 1;
    for (long d : shape) {
      if (d < 0)
        throw invalid("a tensor's shape cannot have a negative dimension: " + java.util.Arrays.toString(shape));
      try {
        count = Math.multiplyExact(count, d);
      } catch (ArithmeticException e) {
        throw invalid("a tensor's shape has more elements than fit in 64 bits: " + java.util.Arrays.toString(shape));
      }
    }
    return count;
  }

  private static int[] intDims(long[] shape) throws OnyxException {
    int[] dims = new int[shape.length];
    for (int i = 0; i < shape.length; ++i) {
      if (shape[i] > Integer.MAX_VALUE)
        throw invalid("dimension " + shape[i] + " is too large for a Java array");
      dims[i] = (int) shape[i];
    }
    return dims;
  }

  static OnyxException invalid(String message) {
    return new OnyxException(OnyxException.OnyxErrorCode.ONYX_INVALID_ARGUMENT, message);
  }
}

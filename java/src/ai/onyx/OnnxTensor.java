/* A tensor (onnxruntime's OnnxTensor): made over a direct buffer without a
 * copy, or from Java arrays with one; read back as arrays or buffers. */
package ai.onyx;

import java.nio.Buffer;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.DoubleBuffer;
import java.nio.FloatBuffer;
import java.nio.IntBuffer;
import java.nio.LongBuffer;
import java.nio.ShortBuffer;
import java.util.Arrays;
import java.util.Optional;

/**
 * A tensor in host memory.
 *
 * <p>Made over a direct buffer in native byte order ({@code
 * ByteBuffer.allocateDirect(n).order(ByteOrder.nativeOrder())} and its
 * typed views), the tensor is that memory: nothing is copied, onyx reads the
 * buffer from its position when a session runs, and writes to the buffer are
 * seen by the next run. The tensor keeps the buffer reachable. A heap buffer,
 * or a typed view in the other byte order, is copied once into a direct
 * buffer. A {@code ByteBuffer} given with an element type is taken as the
 * elements' bytes as they lie in memory (native order), whatever its
 * {@code order()} says.
 */
public final class OnnxTensor extends NativeValue {
  private final TensorInfo info;
  /** The buffer the tensor was made over, when the caller gave one; else null. */
  private final Buffer buffer;

  OnnxTensor(long handle, TensorInfo info, Buffer buffer, Object[] keepAlive) {
    super(handle, keepAlive);
    this.info = info;
    this.buffer = buffer;
  }

  // ---- Made over buffers

  public static OnnxTensor createTensor(OnyxEnvironment env, FloatBuffer data, long[] shape) throws OnyxException {
    return overBuffer(data, data.order(), shape, TensorInfo.OnnxTensorType.ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT);
  }

  public static OnnxTensor createTensor(OnyxEnvironment env, DoubleBuffer data, long[] shape) throws OnyxException {
    return overBuffer(data, data.order(), shape, TensorInfo.OnnxTensorType.ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE);
  }

  /** int8 elements. */
  public static OnnxTensor createTensor(OnyxEnvironment env, ByteBuffer data, long[] shape) throws OnyxException {
    return createTensor(env, data, shape, OnnxJavaType.INT8);
  }

  public static OnnxTensor createTensor(OnyxEnvironment env, ShortBuffer data, long[] shape) throws OnyxException {
    return createTensor(env, data, shape, OnnxJavaType.INT16);
  }

  public static OnnxTensor createTensor(OnyxEnvironment env, IntBuffer data, long[] shape) throws OnyxException {
    return overBuffer(data, data.order(), shape, TensorInfo.OnnxTensorType.ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32);
  }

  public static OnnxTensor createTensor(OnyxEnvironment env, LongBuffer data, long[] shape) throws OnyxException {
    return overBuffer(data, data.order(), shape, TensorInfo.OnnxTensorType.ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64);
  }

  /** 16-bit elements given as their bits: INT16, UINT16, FLOAT16 or BFLOAT16. */
  public static OnnxTensor createTensor(OnyxEnvironment env, ShortBuffer data, long[] shape, OnnxJavaType type)
      throws OnyxException {
    if (type.size != 2 || type == OnnxJavaType.BOOL) {
      throw TensorArrays.invalid("a ShortBuffer holds 16-bit elements, not " + type);
    }
    return overBuffer(data, data.order(), shape, type.onnxType());
  }

  /** Elements of `type` given as their bytes. */
  public static OnnxTensor createTensor(OnyxEnvironment env, ByteBuffer data, long[] shape, OnnxJavaType type)
      throws OnyxException {
    return createTensor(env, data, shape, type.onnxType());
  }

  /** Elements of any fixed-size ONNX type given as their bytes. */
  public static OnnxTensor createTensor(
      OnyxEnvironment env, ByteBuffer data, long[] shape, TensorInfo.OnnxTensorType type) throws OnyxException {
    return overBuffer(data, ByteOrder.nativeOrder(), shape, type);
  }

  private static OnnxTensor overBuffer(Buffer data, ByteOrder order, long[] shape, TensorInfo.OnnxTensorType type)
      throws OnyxException {
    if (data == null || shape == null)
      throw TensorArrays.invalid("the buffer and the shape must not be null");
    if (type.size == 0)
      throw TensorArrays.invalid("a tensor of " + type + " cannot be made over a buffer");
    long count = TensorArrays.elementCount(shape);
    boolean bytes = data instanceof ByteBuffer;
    long needed = bytes ? count * type.size : count;
    if (data.remaining() != needed) {
      throw TensorArrays.invalid("the buffer holds " + data.remaining() + (bytes ? " bytes" : " elements")
          + " after its position, but " + TensorInfo.of(type, shape) + " needs " + needed);
    }
    long byteLength = count * type.size;
    if (data.isDirect() && order == ByteOrder.nativeOrder()) {
      long offset = (long) data.position() * (bytes ? 1 : type.size);
      long handle = createTensorOverBuffer(data, offset, byteLength, shape, type.value);
      return new OnnxTensor(handle, TensorInfo.of(type, shape), data, new Object[] {data});
    }
    ByteBuffer copy = copyToDirect(data, byteLength);
    long handle = createTensorOverBuffer(copy, 0, byteLength, shape, type.value);
    return new OnnxTensor(handle, TensorInfo.of(type, shape), null, new Object[] {copy});
  }

  /** The buffer's remaining elements in a new direct buffer, native order. */
  private static ByteBuffer copyToDirect(Buffer data, long byteLength) throws OnyxException {
    if (byteLength > Integer.MAX_VALUE)
      throw TensorArrays.invalid("the tensor is too large to copy into one buffer");
    ByteBuffer copy = ByteBuffer.allocateDirect((int) byteLength).order(ByteOrder.nativeOrder());
    if (data instanceof ByteBuffer) {
      copy.put(((ByteBuffer) data).duplicate());
    } else if (data instanceof FloatBuffer) {
      copy.asFloatBuffer().put(((FloatBuffer) data).duplicate());
    } else if (data instanceof DoubleBuffer) {
      copy.asDoubleBuffer().put(((DoubleBuffer) data).duplicate());
    } else if (data instanceof ShortBuffer) {
      copy.asShortBuffer().put(((ShortBuffer) data).duplicate());
    } else if (data instanceof IntBuffer) {
      copy.asIntBuffer().put(((IntBuffer) data).duplicate());
    } else if (data instanceof LongBuffer) {
      copy.asLongBuffer().put(((LongBuffer) data).duplicate());
    } else {
      throw TensorArrays.invalid("no tensor can be made over a " + data.getClass().getName());
    }
    copy.rewind();
    return copy;
  }

  // ---- Made from Java values (copied)

  /**
   * A tensor holding a copy of `data`: a primitive array of any rank
   * (float[][]...: FLOAT, DOUBLE, INT8, INT16, INT32, INT64, BOOL), a String
   * array of any rank, or a scalar (a boxed primitive or a String: rank 0).
   */
  public static OnnxTensor createTensor(OnyxEnvironment env, Object data) throws OnyxException {
    if (data == null)
      throw TensorArrays.invalid("the data must not be null");
    if (data instanceof String)
      return createTensor(env, new String[] {(String) data}, new long[0]);
    boolean array = data.getClass().isArray();
    Class<?> element = array ? TensorArrays.elementClass(data) : data.getClass();
    OnnxJavaType type = TensorArrays.javaTypeOf(element);
    // Arrays of boxed numbers (Float[]) are refused: give float[].
    if (type == OnnxJavaType.UNKNOWN || (array && !element.isPrimitive() && type != OnnxJavaType.STRING)) {
      throw TensorArrays.invalid("cannot make a tensor of a " + data.getClass().getSimpleName()
          + ": give a primitive or String array, or a scalar");
    }
    long[] shape = array ? TensorArrays.shapeOf(data) : new long[0];
    if (type == OnnxJavaType.STRING)
      return createTensor(env, TensorArrays.flattenStrings(data, shape), shape);
    ByteBuffer flat = TensorArrays.flatten(data, shape, type);
    long handle = createTensorOverBuffer(flat, 0, flat.capacity(), shape, type.onnxType().value);
    return new OnnxTensor(handle, TensorInfo.of(type.onnxType(), shape), null, new Object[] {flat});
  }

  /** A string tensor of `shape` holding `data` in row-major order (copied into onyx's memory as UTF-8). */
  public static OnnxTensor createTensor(OnyxEnvironment env, String[] data, long[] shape) throws OnyxException {
    if (data == null || shape == null)
      throw TensorArrays.invalid("the strings and the shape must not be null");
    long count = TensorArrays.elementCount(shape);
    if (data.length != count) {
      throw TensorArrays.invalid(data.length + " strings for a string tensor of shape " + Arrays.toString(shape) + " ("
          + count + " elements)");
    }
    long handle = createStringTensor(shape, data);
    TensorInfo info = TensorInfo.of(TensorInfo.OnnxTensorType.ONNX_TENSOR_ELEMENT_DATA_TYPE_STRING, shape);
    return new OnnxTensor(handle, info, null, NOTHING_TO_KEEP);
  }

  // ---- Reading

  @Override
  public OnnxValueType getType() {
    return OnnxValueType.ONNX_TYPE_TENSOR;
  }

  @Override
  public TensorInfo getInfo() {
    return info;
  }

  /**
   * A copy as a Java array of the tensor's shape (float[][]..., String[]...),
   *  or a boxed scalar for rank 0. FLOAT16 and BFLOAT16 are read as float.
   */
  @Override
  public Object getValue() throws OnyxException {
    long[] shape = info.getShape();
    if (info.type == OnnxJavaType.STRING)
      return TensorArrays.reshapeStrings(stringContent(handle()), shape);
    if (info.type == OnnxJavaType.UNKNOWN) {
      throw new OnyxException(OnyxException.OnyxErrorCode.ONYX_NOT_IMPLEMENTED,
          "a tensor of " + info.onnxType + " has no Java array type: read its bytes with getByteBuffer()");
    }
    return TensorArrays.toArray(memory(), info.type, shape);
  }

  /**
   * The tensor's memory, without a copy: the buffer it was made over, or a
   * view of onyx's memory (a FloatBuffer for FLOAT, a ShortBuffer for 16-bit
   * types ..., a ByteBuffer for one-byte and other types), native order.
   * The view is valid while the tensor is open: do not use it after close().
   * Empty for string tensors.
   */
  public Optional<Buffer> getBufferRef() {
    if (buffer != null)
      return Optional.of(buffer);
    if (info.type == OnnxJavaType.STRING)
      return Optional.empty();
    ByteBuffer bytes = memory();
    switch (info.type) {
      case FLOAT:
        return Optional.of(bytes.asFloatBuffer());
      case DOUBLE:
        return Optional.of(bytes.asDoubleBuffer());
      case INT16:
      case UINT16:
      case FLOAT16:
      case BFLOAT16:
        return Optional.of(bytes.asShortBuffer());
      case INT32:
      case UINT32:
        return Optional.of(bytes.asIntBuffer());
      case INT64:
      case UINT64:
        return Optional.of(bytes.asLongBuffer());
      default:
        return Optional.of(bytes);
    }
  }

  /** A copy of the elements' bytes (native order); null for a string tensor. */
  public ByteBuffer getByteBuffer() {
    if (info.type == OnnxJavaType.STRING)
      return null;
    ByteBuffer bytes = memory();
    ByteBuffer copy = ByteBuffer.allocate(bytes.remaining()).order(ByteOrder.nativeOrder());
    copy.put(bytes).rewind();
    return copy;
  }

  /** A copy of a FLOAT tensor's elements; null for other types. */
  public FloatBuffer getFloatBuffer() {
    if (info.type != OnnxJavaType.FLOAT)
      return null;
    FloatBuffer view = memory().asFloatBuffer();
    FloatBuffer copy = FloatBuffer.allocate(view.remaining());
    copy.put(view).rewind();
    return copy;
  }

  /** A copy of a DOUBLE tensor's elements; null for other types. */
  public DoubleBuffer getDoubleBuffer() {
    if (info.type != OnnxJavaType.DOUBLE)
      return null;
    DoubleBuffer view = memory().asDoubleBuffer();
    DoubleBuffer copy = DoubleBuffer.allocate(view.remaining());
    copy.put(view).rewind();
    return copy;
  }

  /** A copy of a 16-bit tensor's elements (INT16, UINT16, FLOAT16, BFLOAT16 as bits); null for other types. */
  public ShortBuffer getShortBuffer() {
    if (info.type.size != 2)
      return null;
    ShortBuffer view = memory().asShortBuffer();
    ShortBuffer copy = ShortBuffer.allocate(view.remaining());
    copy.put(view).rewind();
    return copy;
  }

  /** A copy of an INT32 or UINT32 tensor's elements; null for other types. */
  public IntBuffer getIntBuffer() {
    if (info.type != OnnxJavaType.INT32 && info.type != OnnxJavaType.UINT32)
      return null;
    IntBuffer view = memory().asIntBuffer();
    IntBuffer copy = IntBuffer.allocate(view.remaining());
    copy.put(view).rewind();
    return copy;
  }

  /** A copy of an INT64 or UINT64 tensor's elements; null for other types. */
  public LongBuffer getLongBuffer() {
    if (info.type != OnnxJavaType.INT64 && info.type != OnnxJavaType.UINT64)
      return null;
    LongBuffer view = memory().asLongBuffer();
    LongBuffer copy = LongBuffer.allocate(view.remaining());
    copy.put(view).rewind();
    return copy;
  }

  @Override
  public String toString() {
    return "OnnxTensor(" + info + (isClosed() ? ", closed)" : ")");
  }

  /** A native-order view of the tensor's bytes. */
  private ByteBuffer memory() {
    long count = info.getNumElements();
    ByteBuffer view = (ByteBuffer) tensorMemory(handle(), count * info.onnxType.size);
    return view.order(ByteOrder.nativeOrder());
  }

  private static native long createTensorOverBuffer(
      Buffer buffer, long byteOffset, long byteLength, long[] shape, int elementType) throws OnyxException;

  private static native long createStringTensor(long[] shape, String[] strings) throws OnyxException;

  private static native String[] stringContent(long handle) throws OnyxException;

  private static native Object tensorMemory(long handle, long byteLength);

  static native TensorInfo tensorInfo(long handle) throws OnyxException;

  /** Where the tensor's elements are (tests compare it with bufferAddress). */
  static native long dataAddress(long handle) throws OnyxException;

  /** Where a direct buffer's memory starts. */
  static native long bufferAddress(Buffer buffer);

  long dataAddress() throws OnyxException {
    return dataAddress(handle());
  }
}

/* What every value backed by a native OnyxValue shares: its handle, its
 * release, and the Java memory it reads. */
package ai.onyx;

abstract class NativeValue implements OnnxValue {
  static {
    OnyxNative.load();
  }

  static final Object[] NOTHING_TO_KEEP = new Object[0];

  private long handle;

  /**
   * Java objects (direct buffers) whose memory the native value reads:
   *  held here so that the garbage collector frees them only after the value.
   */
  final Object[] keepAlive;

  NativeValue(long handle, Object[] keepAlive) {
    this.handle = handle;
    this.keepAlive = keepAlive;
  }

  /** The native handle; IllegalStateException once closed. */
  final synchronized long handle() {
    if (handle == 0)
      throw new IllegalStateException(getClass().getSimpleName() + " is closed");
    return handle;
  }

  @Override
  public final synchronized boolean isClosed() {
    return handle == 0;
  }

  @Override
  public final synchronized void close() {
    if (handle == 0)
      return;
    closeParts();
    releaseValue(handle);
    handle = 0;
  }

  /** Frees what a subclass made from the value (a sequence's elements). */
  void closeParts() {}

  /**
   * The Java value for a native value the caller now owns (one a run or
   *  GetValue returned); the native value is released when that fails.
   */
  static OnnxValue wrap(long handle, Object[] keepAlive) throws OnyxException {
    try {
      OnnxValueType type = OnnxValueType.forValue(valueType(handle));
      switch (type) {
        case ONNX_TYPE_TENSOR:
          return new OnnxTensor(handle, OnnxTensor.tensorInfo(handle), null, keepAlive);
        case ONNX_TYPE_SEQUENCE:
          return new OnnxSequence(handle, (SequenceInfo) typeInfo(handle), keepAlive);
        case ONNX_TYPE_MAP:
          return new OnnxMap(handle, (MapInfo) typeInfo(handle), keepAlive);
        default:
          return new OtherValue(handle, type, keepAlive);
      }
    } catch (OnyxException | RuntimeException e) {
      releaseValue(handle);
      throw e;
    }
  }

  /** A value the binding has no class for (an empty optional): its kind only. */
  static final class OtherValue extends NativeValue {
    private final OnnxValueType type;

    OtherValue(long handle, OnnxValueType type, Object[] keepAlive) {
      super(handle, keepAlive);
      this.type = type;
    }

    /** null: an empty optional holds nothing, and other kinds have no Java form. */
    @Override
    public Object getValue() {
      return null;
    }

    @Override
    public ValueInfo getInfo() {
      return new OtherValueInfo(type.getValue());
    }

    @Override
    public OnnxValueType getType() {
      return type;
    }
  }

  static native void releaseValue(long handle);

  /** ONNXType, or ONNX_TYPE_OPTIONAL for an empty optional. */
  static native int valueType(long handle) throws OnyxException;

  static native long valueCount(long handle) throws OnyxException;

  static native long valueAt(long handle, int index) throws OnyxException;

  static native ValueInfo typeInfo(long handle) throws OnyxException;
}

/* A map's type: its key type and its values' type. */
package ai.onyx;

public final class MapInfo implements ValueInfo {
  public final OnnxJavaType keyType;
  public final TensorInfo.OnnxTensorType onnxKeyType;
  private final ValueInfo valueInfo;

  MapInfo(int keyType, ValueInfo valueInfo) {
    this.onnxKeyType = TensorInfo.OnnxTensorType.forValue(keyType);
    this.keyType = OnnxJavaType.of(onnxKeyType);
    this.valueInfo = valueInfo;
  }

  public ValueInfo getValueInfo() {
    return valueInfo;
  }

  @Override
  public String toString() {
    return "MapInfo(key=" + onnxKeyType + ", value=" + valueInfo + ")";
  }
}

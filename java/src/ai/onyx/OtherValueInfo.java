/* The type of a value that is neither a tensor, a sequence nor a map (an
 * optional, an opaque value): the C API describes no more than its kind. */
package ai.onyx;

public final class OtherValueInfo implements ValueInfo {
  private final OnnxValue.OnnxValueType type;

  OtherValueInfo(int type) {
    this.type = OnnxValue.OnnxValueType.forValue(type);
  }

  public OnnxValue.OnnxValueType getType() {
    return type;
  }

  @Override
  public String toString() {
    return "OtherValueInfo(" + type + ")";
  }
}

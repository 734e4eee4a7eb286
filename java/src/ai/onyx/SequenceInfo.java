/* A sequence's type: the type of its elements. */
package ai.onyx;

public final class SequenceInfo implements ValueInfo {
  private final ValueInfo elementInfo;

  SequenceInfo(ValueInfo elementInfo) {
    this.elementInfo = elementInfo;
  }

  public ValueInfo getElementInfo() {
    return elementInfo;
  }

  @Override
  public String toString() {
    return "SequenceInfo(" + elementInfo + ")";
  }
}

/* A sequence a run returned: its elements as values. */
package ai.onyx;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

public final class OnnxSequence extends NativeValue {
  private final SequenceInfo info;
  private List<OnnxValue> elements;

  OnnxSequence(long handle, SequenceInfo info, Object[] keepAlive) {
    super(handle, keepAlive);
    this.info = info;
  }

  /** The elements, each a value owned by the sequence and closed with it. */
  @Override
  public synchronized List<OnnxValue> getValue() throws OnyxException {
    if (elements == null) {
      long handle = handle();
      long count = valueCount(handle);
      List<OnnxValue> made = new ArrayList<>();
      try {
        for (int i = 0; i < count; ++i) made.add(wrap(valueAt(handle, i), keepAlive));
      } catch (OnyxException | RuntimeException e) {
        for (OnnxValue value : made) value.close();
        throw e;
      }
      elements = Collections.unmodifiableList(made);
    }
    return elements;
  }

  @Override
  public SequenceInfo getInfo() {
    return info;
  }

  @Override
  public OnnxValueType getType() {
    return OnnxValueType.ONNX_TYPE_SEQUENCE;
  }

  @Override
  synchronized void closeParts() {
    if (elements != null) {
      for (OnnxValue value : elements) value.close();
      elements = null;
    }
  }
}

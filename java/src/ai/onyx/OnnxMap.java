/* A map a run returned (ONNX-ML's map: keys and values as two 1-D tensors). */
package ai.onyx;

import java.lang.reflect.Array;
import java.util.LinkedHashMap;
import java.util.Map;

public final class OnnxMap extends NativeValue {
  private final MapInfo info;

  OnnxMap(long handle, MapInfo info, Object[] keepAlive) {
    super(handle, keepAlive);
    this.info = info;
  }

  /** A copy: each key with its value, boxed (Long, String, Float ...), in the map's order. */
  @Override
  public Map<Object, Object> getValue() throws OnyxException {
    long handle = handle();
    try (OnnxValue keys = wrap(valueAt(handle, 0), keepAlive); OnnxValue values = wrap(valueAt(handle, 1), keepAlive)) {
      Object keyArray = keys.getValue();
      Object valueArray = values.getValue();
      int count = Array.getLength(keyArray);
      if (Array.getLength(valueArray) != count) {
        throw new OnyxException(OnyxException.OnyxErrorCode.ONYX_FAIL,
            "a map with " + count + " keys and " + Array.getLength(valueArray) + " values");
      }
      Map<Object, Object> map = new LinkedHashMap<>();
      for (int i = 0; i < count; ++i) map.put(Array.get(keyArray, i), Array.get(valueArray, i));
      return map;
    }
  }

  @Override
  public MapInfo getInfo() {
    return info;
  }

  @Override
  public OnnxValueType getType() {
    return OnnxValueType.ONNX_TYPE_MAP;
  }
}

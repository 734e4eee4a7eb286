/* A model's metadata: producer, graph name, domain, descriptions, version
 * and the custom metadata map (onnxruntime's OnnxModelMetadata). */
package ai.onyx;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;

public final class OnnxModelMetadata {
  private final String producerName;
  private final String graphName;
  private final String domain;
  private final String description;
  private final String graphDescription;
  private final long version;
  private final Map<String, String> customMetadata;

  /** From the native side's array (see OnyxSession.metadata). */
  OnnxModelMetadata(Object[] fields) {
    producerName = (String) fields[0];
    graphName = (String) fields[1];
    domain = (String) fields[2];
    description = (String) fields[3];
    graphDescription = (String) fields[4];
    version = (Long) fields[5];
    String[] keys = (String[]) fields[6];
    String[] values = (String[]) fields[7];
    Map<String, String> map = new LinkedHashMap<>();
    for (int i = 0; i < keys.length; ++i) map.put(keys[i], values[i]);
    customMetadata = Collections.unmodifiableMap(map);
  }

  public String getProducerName() {
    return producerName;
  }

  public String getGraphName() {
    return graphName;
  }

  public String getDomain() {
    return domain;
  }

  public String getDescription() {
    return description;
  }

  public String getGraphDescription() {
    return graphDescription;
  }

  public long getVersion() {
    return version;
  }

  public Map<String, String> getCustomMetadata() {
    return customMetadata;
  }

  public Optional<String> getCustomMetadataValue(String key) {
    return Optional.ofNullable(customMetadata.get(key));
  }

  @Override
  public String toString() {
    return "OnnxModelMetadata(producer=" + producerName + ", graph=" + graphName + ", version=" + version + ")";
  }
}

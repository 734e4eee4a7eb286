/* A session input's, output's or overridable initializer's name and type. */
package ai.onyx;

public final class NodeInfo {
  private final String name;
  private final ValueInfo info;

  /** Made by the native code. */
  NodeInfo(String name, ValueInfo info) {
    this.name = name;
    this.info = info;
  }

  public String getName() {
    return name;
  }

  public ValueInfo getInfo() {
    return info;
  }

  @Override
  public String toString() {
    return "NodeInfo(name=" + name + ", info=" + info + ")";
  }
}

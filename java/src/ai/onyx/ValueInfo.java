/* What a value is, without its contents: TensorInfo, SequenceInfo, MapInfo
 * or OtherValueInfo. */
package ai.onyx;

public interface ValueInfo {}

/* A model loaded and ready to run (onnxruntime's OrtSession), with its
 * options, run options and results. */
package ai.onyx;

import java.util.AbstractMap;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * A session: made by {@link OnyxEnvironment#createSession}, run with
 * {@link #run}. {@code run} may be called from several threads at once;
 * close the session only when no run is in flight.
 */
public final class OnyxSession implements AutoCloseable {
  static {
    OnyxNative.load();
  }

  private long handle;
  private final Map<String, NodeInfo> inputInfo;
  private final Map<String, NodeInfo> outputInfo;
  /** Memory the options' initializers read (their buffers), kept for the session's life. */
  private final Object[] keepAlive;

  OnyxSession(OnyxEnvironment env, String modelPath, SessionOptions options) throws OnyxException {
    this(createSession(env.handle, modelPath, optionsHandle(options)), options);
  }

  OnyxSession(OnyxEnvironment env, byte[] model, SessionOptions options) throws OnyxException {
    this(createSessionFromArray(env.handle, model, optionsHandle(options)), options);
  }

  private OnyxSession(long handle, SessionOptions options) throws OnyxException {
    this.handle = handle;
    try {
      this.inputInfo = byName(inputInfo(handle));
      this.outputInfo = byName(outputInfo(handle));
    } catch (OnyxException | RuntimeException e) {
      releaseSession(handle);
      throw e;
    }
    this.keepAlive = options != null ? options.initializerMemory() : NativeValue.NOTHING_TO_KEEP;
  }

  private static long optionsHandle(SessionOptions options) {
    return options != null ? options.handle() : 0;
  }

  private static Map<String, NodeInfo> byName(NodeInfo[] nodes) {
    Map<String, NodeInfo> map = new LinkedHashMap<>();
    for (NodeInfo node : nodes) map.put(node.getName(), node);
    return Collections.unmodifiableMap(map);
  }

  private synchronized long handle() {
    if (handle == 0)
      throw new IllegalStateException("the session is closed");
    return handle;
  }

  public long getNumInputs() {
    return inputInfo.size();
  }

  public long getNumOutputs() {
    return outputInfo.size();
  }

  /** The inputs' names, in the model's order. */
  public Set<String> getInputNames() {
    return inputInfo.keySet();
  }

  public Set<String> getOutputNames() {
    return outputInfo.keySet();
  }

  /** Each input's type and shape (-1 and the symbol for symbolic dimensions), in the model's order. */
  public Map<String, NodeInfo> getInputInfo() {
    return inputInfo;
  }

  public Map<String, NodeInfo> getOutputInfo() {
    return outputInfo;
  }

  /** Initializers a caller may feed as inputs to override them. */
  public Map<String, NodeInfo> getOverridableInitializerInfo() throws OnyxException {
    return byName(overridableInitializerInfo(handle()));
  }

  public OnnxModelMetadata getMetadata() throws OnyxException {
    return new OnnxModelMetadata(metadata(handle()));
  }

  /** The providers the session runs on, in order of preference ("CPUExecutionProvider" last). */
  public List<String> getProviders() throws OnyxException {
    List<String> names = new ArrayList<>();
    Collections.addAll(names, providers(handle()));
    return Collections.unmodifiableList(names);
  }

  /** Ends profiling (SessionOptions.enableProfiling) and returns the profile's file name. */
  public String endProfiling() throws OnyxException {
    return endProfiling(handle());
  }

  public long getProfilingStartTimeInNs() throws OnyxException {
    return profilingStartTimeNs(handle());
  }

  /** Runs the model for every output. */
  public Result run(Map<String, ? extends OnnxValue> inputs) throws OnyxException {
    return run(inputs, outputInfo.keySet(), null);
  }

  public Result run(Map<String, ? extends OnnxValue> inputs, RunOptions runOptions) throws OnyxException {
    return run(inputs, outputInfo.keySet(), runOptions);
  }

  public Result run(Map<String, ? extends OnnxValue> inputs, Set<String> requestedOutputs) throws OnyxException {
    return run(inputs, requestedOutputs, null);
  }

  /**
   * Runs the model on `inputs` (name to value) and returns the outputs named
   * in `requestedOutputs`, in that set's order. A missing or unknown input,
   * a wrong type or shape, or a node that fails, is an OnyxException with
   * onyx's message (naming the input or the node). `runOptions` may be null.
   */
  public Result run(Map<String, ? extends OnnxValue> inputs, Set<String> requestedOutputs, RunOptions runOptions)
      throws OnyxException {
    String[] inputNames = new String[inputs.size()];
    long[] inputHandles = new long[inputs.size()];
    List<Object> memory = new ArrayList<>();
    int i = 0;
    for (Map.Entry<String, ? extends OnnxValue> input : inputs.entrySet()) {
      OnnxValue value = input.getValue();
      if (!(value instanceof NativeValue)) {
        throw TensorArrays.invalid(
            "input '" + input.getKey() + "' is " + (value == null ? "null" : "not a value made by onyx"));
      }
      NativeValue nativeValue = (NativeValue) value;
      inputNames[i] = input.getKey();
      inputHandles[i] = nativeValue.handle();
      Collections.addAll(memory, nativeValue.keepAlive);
      ++i;
    }
    String[] outputNames = requestedOutputs.toArray(new String[0]);
    long[] outputHandles =
        run(handle(), runOptions != null ? runOptions.handle() : 0, inputNames, inputHandles, outputNames);
    // An output may share an input's memory (Identity): it keeps the inputs' buffers.
    Object[] outputMemory = memory.toArray();
    List<OnnxValue> outputs = new ArrayList<>();
    try {
      for (long output : outputHandles) outputs.add(NativeValue.wrap(output, outputMemory));
    } catch (OnyxException | RuntimeException e) {
      for (OnnxValue made : outputs) made.close();
      for (int k = outputs.size() + 1; k < outputHandles.length; ++k) NativeValue.releaseValue(outputHandles[k]);
      throw e;
    }
    return new Result(outputNames, outputs);
  }

  @Override
  public synchronized void close() {
    if (handle != 0) {
      releaseSession(handle);
      handle = 0;
    }
  }

  @Override
  public String toString() {
    return "OnyxSession(inputs=" + inputInfo.keySet() + ", outputs=" + outputInfo.keySet() + ")";
  }

  /** The outputs of one run: values by name, in the order they were asked for. Closing it closes them. */
  public static final class Result implements AutoCloseable, Iterable<Map.Entry<String, OnnxValue>> {
    private final List<String> names;
    private final List<OnnxValue> values;
    private final Map<String, OnnxValue> byName = new LinkedHashMap<>();

    Result(String[] names, List<OnnxValue> values) {
      this.names = List.of(names);
      this.values = Collections.unmodifiableList(values);
      for (int i = 0; i < names.length; ++i) byName.put(names[i], values.get(i));
    }

    public int size() {
      return values.size();
    }

    public OnnxValue get(int index) {
      return values.get(index);
    }

    public Optional<OnnxValue> get(String name) {
      return Optional.ofNullable(byName.get(name));
    }

    @Override
    public Iterator<Map.Entry<String, OnnxValue>> iterator() {
      List<Map.Entry<String, OnnxValue>> entries = new ArrayList<>();
      for (int i = 0; i < values.size(); ++i) {
        entries.add(new AbstractMap.SimpleImmutableEntry<>(names.get(i), values.get(i)));
      }
      return entries.iterator();
    }

    @Override
    public void close() {
      for (OnnxValue value : values) value.close();
    }
  }

  /** How sessions are made (onnxruntime's SessionOptions). Not thread-safe. */
  public static class SessionOptions implements AutoCloseable {
    static {
      OnyxNative.load();
    }

    /** Graph optimization levels (the C API's GraphOptimizationLevel). */
    public enum OptLevel {
      NO_OPT(0),
      BASIC_OPT(1),
      EXTENDED_OPT(2),
      LAYOUT_OPT(3),
      ALL_OPT(99);

      private final int value;

      OptLevel(int value) {
        this.value = value;
      }

      public int getValue() {
        return value;
      }
    }

    public enum ExecutionMode {
      SEQUENTIAL(0),
      PARALLEL(1);

      private final int value;

      ExecutionMode(int value) {
        this.value = value;
      }

      public int getValue() {
        return value;
      }
    }

    private long handle;
    /** The initializers' memory (see addInitializer). */
    private final List<Object> initializerMemory = new ArrayList<>();

    public SessionOptions() {
      try {
        handle = createOptions();
      } catch (OnyxException e) {
        throw new IllegalStateException("cannot create session options: " + e.getMessage(), e);
      }
    }

    synchronized long handle() {
      if (handle == 0)
        throw new IllegalStateException("the session options are closed");
      return handle;
    }

    Object[] initializerMemory() {
      return initializerMemory.toArray();
    }

    /** Threads of the session's pool (0: one per core; 1: the calling thread alone). */
    public void setIntraOpNumThreads(int threads) throws OnyxException {
      setIntraOpNumThreads(handle(), threads);
    }

    public void setInterOpNumThreads(int threads) throws OnyxException {
      setInterOpNumThreads(handle(), threads);
    }

    public void setOptimizationLevel(OptLevel level) throws OnyxException {
      setOptimizationLevel(handle(), level.getValue());
    }

    public void setExecutionMode(ExecutionMode mode) throws OnyxException {
      setExecutionMode(handle(), mode.getValue());
    }

    /** Saves the optimized graph the session runs to `path`. */
    public void setOptimizedModelFilePath(String path) throws OnyxException {
      setOptimizedModelFilePath(handle(), path);
    }

    /** Profiles the session into a JSON file whose name starts with `filePrefix`. */
    public void enableProfiling(String filePrefix) throws OnyxException {
      enableProfiling(handle(), filePrefix);
    }

    public void disableProfiling() throws OnyxException {
      disableProfiling(handle());
    }

    public void setMemoryPatternOptimization(boolean enabled) throws OnyxException {
      setMemoryPatternOptimization(handle(), enabled);
    }

    public void setCPUArenaAllocator(boolean enabled) throws OnyxException {
      setCPUArenaAllocator(handle(), enabled);
    }

    public void setLoggerId(String id) throws OnyxException {
      setLoggerId(handle(), id);
    }

    public void setSessionLogLevel(OnyxLoggingLevel level) throws OnyxException {
      setSessionLogLevel(handle(), level.getValue());
    }

    /** A session configuration entry ("session.intra_op.allow_spinning" = "0"), as onnxruntime's addConfigEntry. */
    public void addConfigEntry(String key, String value) throws OnyxException {
      addConfigEntry(handle(), key, value);
    }

    /** The same as {@link #addConfigEntry}, under the C API's name. */
    public void addSessionConfigEntry(String key, String value) throws OnyxException {
      addConfigEntry(handle(), key, value);
    }

    /** Fixes the symbolic dimension `name` of the inputs to `value`. */
    public void addFreeDimensionOverrideByName(String name, long value) throws OnyxException {
      addFreeDimensionOverrideByName(handle(), name, value);
    }

    /** Fixes the dimensions with denotation `denotation` to `value`. */
    public void addFreeDimensionOverride(String denotation, long value) throws OnyxException {
      addFreeDimensionOverride(handle(), denotation, value);
    }

    /**
     * Puts `tensor` in place of the model's initializer `name` (same type and
     * shape). The sessions share its memory: the tensor's buffer is kept
     * reachable by these options and by every session made with them.
     */
    public void addInitializer(String name, OnnxTensor tensor) throws OnyxException {
      addInitializer(handle(), name, tensor.handle());
      Collections.addAll(initializerMemory, tensor.keepAlive);
    }

    /** Appends an execution provider by name with its options (the CPU provider stays the last fallback). */
    public void addExecutionProvider(String name, Map<String, String> providerOptions) throws OnyxException {
      String[] keys = providerOptions.keySet().toArray(new String[0]);
      String[] values = new String[keys.length];
      for (int i = 0; i < keys.length; ++i) values[i] = providerOptions.get(keys[i]);
      addExecutionProvider(handle(), name, keys, values);
    }

    /**
     * Loads a library of custom operators (a shared library exporting
     * RegisterCustomOps, such as examples/custom_op_library) and registers
     * its operators for sessions made with these options. The library stays
     * loaded for the rest of the process.
     */
    public void registerCustomOpLibrary(String path) throws OnyxException {
      registerCustomOpLibrary(handle(), path);
    }

    /** Calls the RegisterCustomOps-shaped function `functionName` already loaded in the process. */
    public void registerCustomOpsUsingFunction(String functionName) throws OnyxException {
      registerCustomOpsUsingFunction(handle(), functionName);
    }

    @Override
    public synchronized void close() {
      if (handle != 0) {
        releaseOptions(handle);
        handle = 0;
      }
    }

    private static native long createOptions() throws OnyxException;

    private static native void releaseOptions(long handle);

    private static native void setIntraOpNumThreads(long handle, int threads) throws OnyxException;

    private static native void setInterOpNumThreads(long handle, int threads) throws OnyxException;

    private static native void setOptimizationLevel(long handle, int level) throws OnyxException;

    private static native void setExecutionMode(long handle, int mode) throws OnyxException;

    private static native void setOptimizedModelFilePath(long handle, String path) throws OnyxException;

    private static native void enableProfiling(long handle, String prefix) throws OnyxException;

    private static native void disableProfiling(long handle) throws OnyxException;

    private static native void setMemoryPatternOptimization(long handle, boolean enabled) throws OnyxException;

    private static native void setCPUArenaAllocator(long handle, boolean enabled) throws OnyxException;

    private static native void setLoggerId(long handle, String id) throws OnyxException;

    private static native void setSessionLogLevel(long handle, int level) throws OnyxException;

    private static native void addConfigEntry(long handle, String key, String value) throws OnyxException;

    private static native void addFreeDimensionOverrideByName(long handle, String name, long value)
        throws OnyxException;

    private static native void addFreeDimensionOverride(long handle, String denotation, long value)
        throws OnyxException;

    private static native void addInitializer(long handle, String name, long value) throws OnyxException;

    private static native void addExecutionProvider(long handle, String name, String[] keys, String[] values)
        throws OnyxException;

    private static native void registerCustomOpLibrary(long handle, String path) throws OnyxException;

    private static native void registerCustomOpsUsingFunction(long handle, String function) throws OnyxException;
  }

  /** Options of one run (onnxruntime's RunOptions). setTerminate may be called from another thread. */
  public static class RunOptions implements AutoCloseable {
    static {
      OnyxNative.load();
    }

    private long handle;

    public RunOptions() {
      try {
        handle = createRunOptions();
      } catch (OnyxException e) {
        throw new IllegalStateException("cannot create run options: " + e.getMessage(), e);
      }
    }

    synchronized long handle() {
      if (handle == 0)
        throw new IllegalStateException("the run options are closed");
      return handle;
    }

    public void setLogLevel(OnyxLoggingLevel level) throws OnyxException {
      setLogLevel(handle(), level.getValue());
    }

    public OnyxLoggingLevel getLogLevel() throws OnyxException {
      int level = getLogLevel(handle());
      for (OnyxLoggingLevel candidate : OnyxLoggingLevel.values()) {
        if (candidate.getValue() == level)
          return candidate;
      }
      return OnyxLoggingLevel.ONYX_LOGGING_LEVEL_WARNING;
    }

    public void setRunTag(String tag) throws OnyxException {
      setRunTag(handle(), tag);
    }

    public String getRunTag() throws OnyxException {
      return getRunTag(handle());
    }

    /** true: runs using these options stop between nodes with an error; false: they run again. */
    public void setTerminate(boolean terminate) throws OnyxException {
      setTerminate(handle(), terminate);
    }

    public void addRunConfigEntry(String key, String value) throws OnyxException {
      addRunConfigEntry(handle(), key, value);
    }

    @Override
    public synchronized void close() {
      if (handle != 0) {
        releaseRunOptions(handle);
        handle = 0;
      }
    }

    private static native long createRunOptions() throws OnyxException;

    private static native void releaseRunOptions(long handle);

    private static native void setLogLevel(long handle, int level) throws OnyxException;

    private static native int getLogLevel(long handle) throws OnyxException;

    private static native void setRunTag(long handle, String tag) throws OnyxException;

    private static native String getRunTag(long handle) throws OnyxException;

    private static native void setTerminate(long handle, boolean terminate) throws OnyxException;

    private static native void addRunConfigEntry(long handle, String key, String value) throws OnyxException;
  }

  private static native long createSession(long env, String path, long options) throws OnyxException;

  private static native long createSessionFromArray(long env, byte[] model, long options) throws OnyxException;

  private static native void releaseSession(long handle);

  private static native NodeInfo[] inputInfo(long handle) throws OnyxException;

  private static native NodeInfo[] outputInfo(long handle) throws OnyxException;

  private static native NodeInfo[] overridableInitializerInfo(long handle) throws OnyxException;

  private static native long[] run(
      long handle, long runOptions, String[] inputNames, long[] inputs, String[] outputNames) throws OnyxException;

  private static native Object[] metadata(long handle) throws OnyxException;

  private static native String endProfiling(long handle) throws OnyxException;

  private static native long profilingStartTimeNs(long handle) throws OnyxException;

  private static native String[] providers(long handle) throws OnyxException;
}

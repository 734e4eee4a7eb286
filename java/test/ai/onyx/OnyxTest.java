/* The Java binding's checks, a plain runner (no JUnit: nothing can be
 * downloaded):
 *
 *   java -Djava.library.path=build/java -cp build/java/onyx.jar:build/java/tests ai.onyx.OnyxTest \
 *       --models models [--custom-op-library LIB --custom-op-model MODEL] [--values-model MODEL]
 *
 * --models holds tiny_cnn.onnx; the custom-op library is
 * examples/custom_op_library built out of tree, its model and the values
 * model (strings, a sequence, maps) are written by
 * tests/python/test_java_api.py. Prints "ok: ..." per check, exits 1 on the
 * first failure naming it, and last prints the outputs the cross-language
 * test compares, as "output NAME: v0 v1 ..." lines whose numbers parse back
 * to the same float32. In package ai.onyx to reach the package-private
 * addresses that prove a direct buffer is not copied. */
package ai.onyx;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

public final class OnyxTest {
  private static final long[] IMAGE_SHAPE = {1, 3, 32, 32};
  private static final int IMAGE_COUNT = 3 * 32 * 32;

  /** One named check; returns what "ok: NAME" is followed by. */
  private interface Check {
    String run() throws Exception;
  }

  private final OnyxEnvironment env =
      OnyxEnvironment.getEnvironment(OnyxLoggingLevel.ONYX_LOGGING_LEVEL_WARNING, "java-test");
  private final Map<String, String> args;
  private final Map<String, float[]> outputs = new LinkedHashMap<>();
  private float[] probabilities;

  private OnyxTest(Map<String, String> args) {
    this.args = args;
  }

  public static void main(String[] argv) {
    Map<String, String> args = new HashMap<>();
    for (int i = 0; i + 1 < argv.length; i += 2) {
      if (!argv[i].startsWith("--"))
        usage("unexpected argument " + argv[i]);
      args.put(argv[i].substring(2), argv[i + 1]);
    }
    if (argv.length % 2 != 0 || !args.containsKey("models"))
      usage("--models DIR is required");
    new OnyxTest(args).runAll();
  }

  private static void usage(String problem) {
    System.err.println(problem);
    System.err.println(
        "usage: OnyxTest --models DIR [--custom-op-library LIB --custom-op-model MODEL] [--values-model MODEL]");
    System.exit(2);
  }

  private void runAll() {
    check("versions and providers", this::versions);
    check("tiny_cnn metadata", this::tinyCnnMetadata);
    check("tiny_cnn over a direct buffer, not copied", this::tinyCnnDirectBuffer);
    check("writes to the input buffer reach the next run", this::inputBufferIsShared);
    check("Java arrays and heap buffers are copied in", this::tinyCnnFromArrays);
    check("a session from the model's bytes", this::sessionFromBytes);
    check("runs from several threads", this::concurrentRuns);
    check("a missing input", this::missingInput);
    check("a wrong input shape", this::wrongShape);
    check("an unknown output", this::unknownOutput);
    check("a buffer of the wrong size", this::wrongBufferSize);
    check("run options: tag and terminate", this::runOptions);
    check("model metadata", this::metadata);
    check("string tensors", this::stringTensors);
    check("arrays of every Java type round-trip", this::arrayRoundTrips);
    check("AutoCloseable: closed objects refuse use", this::closedObjects);
    check("a custom-op library that does not exist", this::missingLibrary);
    if (args.containsKey("values-model")) {
      check("strings, sequences and maps through a session", this::valuesModel);
    }
    if (args.containsKey("custom-op-library")) {
      check("the custom-op library: Y = 2 tanh(X)", this::customOps);
      check("a failing custom op names its node", this::failingCustomOp);
    }
    for (Map.Entry<String, float[]> output : outputs.entrySet()) {
      StringBuilder line = new StringBuilder("output ").append(output.getKey()).append(":");
      // %.9g of the float's exact double: 9 significant digits give back the same float32.
      for (float v : output.getValue()) line.append(' ').append(String.format(Locale.ROOT, "%.9g", (double) v));
      System.out.println(line);
    }
    System.out.println("all Java API checks passed");
  }

  private void check(String name, Check check) {
    try {
      String detail = check.run();
      System.out.println("ok: " + name + (detail.isEmpty() ? "" : " -> " + detail));
    } catch (Throwable e) {
      System.out.flush();
      System.err.println("FAILED: " + name + ": " + e);
      e.printStackTrace();
      System.exit(1);
    }
  }

  private static void expect(boolean condition, String what) {
    if (!condition)
      throw new AssertionError(what);
  }

  /** `action` must throw an OnyxException of `code` whose message holds `text`; returns the message. */
  private interface Action {
    void run() throws Exception;
  }

  private static String expectError(Action action, OnyxException.OnyxErrorCode code, String text) throws Exception {
    try {
      action.run();
    } catch (OnyxException e) {
      expect(code == null || e.getCode() == code,
          "error code " + e.getCode() + ", expected " + code + ": " + e.getMessage());
      expect(e.getMessage().contains(text), "message '" + e.getMessage() + "' does not contain '" + text + "'");
      return e.getCode() + ": " + e.getMessage();
    }
    throw new AssertionError("no OnyxException; one with '" + text + "' was expected");
  }

  // ---- tiny_cnn

  /** The input every language feeds tiny_cnn (tests/python/bindings_util.tiny_cnn_image). */
  private static float imageElement(int i) {
    return (float) (((i * 7) % 101) - 50) / 64.0f;
  }

  private static float[][][][] imageArray() {
    float[][][][] image = new float[1][3][32][32];
    for (int i = 0; i < IMAGE_COUNT; ++i) image[0][i / 1024][(i / 32) % 32][i % 32] = imageElement(i);
    return image;
  }

  private Path model(String name) {
    return Paths.get(args.get("models"), name);
  }

  private OnyxSession.SessionOptions oneThread() throws OnyxException {
    OnyxSession.SessionOptions options = new OnyxSession.SessionOptions();
    options.setIntraOpNumThreads(1);
    return options;
  }

  private OnyxSession tinyCnn() throws OnyxException {
    try (OnyxSession.SessionOptions options = oneThread()) {
      options.setOptimizationLevel(OnyxSession.SessionOptions.OptLevel.ALL_OPT);
      options.addSessionConfigEntry("session.intra_op.allow_spinning", "0");
      return env.createSession(model("tiny_cnn.onnx").toString(), options);
    }
  }

  private static float[] runTinyCnn(OnyxSession session, OnnxTensor image) throws OnyxException {
    try (OnyxSession.Result result = session.run(Collections.singletonMap("image", image))) {
      OnnxTensor output = (OnnxTensor) result.get(0);
      FloatBuffer copy = output.getFloatBuffer();
      float[] values = new float[copy.remaining()];
      copy.get(values);
      return values;
    }
  }

  private String versions() throws Exception {
    String version = OnyxEnvironment.getVersion();
    expect(!version.isEmpty(), "a version");
    expect(OnyxEnvironment.getBuildInfo().contains("onyx"), "build info names onyx");
    Set<String> providers = OnyxEnvironment.getAvailableProviders();
    expect(providers.contains("CPUExecutionProvider"), "the CPU provider among " + providers);
    expect(OnyxEnvironment.getEnvironment() == env, "one environment for the process");
    return "onyx " + version + ", providers " + providers;
  }

  private String tinyCnnMetadata() throws Exception {
    try (OnyxSession session = tinyCnn()) {
      expect(session.getNumInputs() == 1 && session.getNumOutputs() == 1, "one input, one output");
      NodeInfo input = session.getInputInfo().get("image");
      expect(input != null, "an input named image: " + session.getInputNames());
      TensorInfo info = (TensorInfo) input.getInfo();
      expect(info.type == OnnxJavaType.FLOAT, "a float input, not " + info.type);
      expect(info.onnxType == TensorInfo.OnnxTensorType.ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, "ONNX float");
      expect(Arrays.equals(info.getShape(), new long[] {-1, 3, 32, 32}), "shape " + Arrays.toString(info.getShape()));
      expect(info.getDimensionNames()[0].equals("batch"),
          "the batch dimension is named: " + Arrays.toString(info.getDimensionNames()));
      NodeInfo output = session.getOutputInfo().values().iterator().next();
      TensorInfo outputInfo = (TensorInfo) output.getInfo();
      expect(outputInfo.type == OnnxJavaType.FLOAT && outputInfo.rank() == 2, "a float matrix output: " + outputInfo);
      expect(outputInfo.getShape()[1] == 10, "10 classes: " + outputInfo);
      expect(session.getProviders().get(session.getProviders().size() - 1).equals("CPUExecutionProvider"), "CPU last");
      return input + "; " + output;
    }
  }

  private String tinyCnnDirectBuffer() throws Exception {
    ByteBuffer bytes = ByteBuffer.allocateDirect(IMAGE_COUNT * 4).order(ByteOrder.nativeOrder());
    FloatBuffer floats = bytes.asFloatBuffer();
    for (int i = 0; i < IMAGE_COUNT; ++i) floats.put(i, imageElement(i));
    try (OnyxSession session = tinyCnn(); OnnxTensor image = OnnxTensor.createTensor(env, floats, IMAGE_SHAPE)) {
      // The tensor is the buffer's memory: the same address, and the same buffer back.
      expect(image.dataAddress() == OnnxTensor.bufferAddress(bytes), "the tensor's data is the buffer's memory");
      expect(image.getBufferRef().get() == floats, "getBufferRef is the caller's buffer");
      try (OnyxSession.Result result = session.run(Collections.singletonMap("image", image))) {
        expect(result.size() == 1, "one output");
        OnnxTensor output = (OnnxTensor) result.get(0);
        expect(result.get(session.getOutputNames().iterator().next()).get() == output, "the output by name");
        probabilities = new float[10];
        output.getFloatBuffer().get(probabilities);
        // The same numbers read three ways: a view of onyx's memory, a copy, an array.
        FloatBuffer view = (FloatBuffer) output.getBufferRef().get();
        float[][] array = (float[][]) output.getValue();
        double sum = 0;
        for (int i = 0; i < 10; ++i) {
          expect(Float.floatToIntBits(view.get(i)) == Float.floatToIntBits(probabilities[i]), "view = copy");
          expect(Float.floatToIntBits(array[0][i]) == Float.floatToIntBits(probabilities[i]), "array = copy");
          sum += probabilities[i];
        }
        expect(Math.abs(sum - 1) < 1e-5, "softmax probabilities sum to 1, not " + sum);
        outputs.put("probabilities", probabilities);
        return String.format(Locale.ROOT, "10 probabilities summing to %.6f", sum);
      }
    }
  }

  private String inputBufferIsShared() throws Exception {
    ByteBuffer bytes = ByteBuffer.allocateDirect(IMAGE_COUNT * 4 + 64).order(ByteOrder.nativeOrder());
    // From a position other than 0: the tensor starts where the buffer's position is.
    bytes.position(64);
    ByteBuffer window = bytes.slice().order(ByteOrder.nativeOrder());
    for (int i = 0; i < IMAGE_COUNT; ++i) window.putFloat(i * 4, imageElement(i));
    bytes.position(64);
    try (OnyxSession session = tinyCnn();
         OnnxTensor image = OnnxTensor.createTensor(env, bytes, IMAGE_SHAPE, OnnxJavaType.FLOAT)) {
      expect(image.dataAddress() == OnnxTensor.bufferAddress(bytes) + 64, "the tensor starts at the position");
      expect(Arrays.equals(runTinyCnn(session, image), probabilities), "the same probabilities as before");
      for (int i = 0; i < IMAGE_COUNT; ++i) window.putFloat(i * 4, 0.25f);
      float[] changed = runTinyCnn(session, image);
      expect(!Arrays.equals(changed, probabilities), "a changed buffer changes the output");
      for (int i = 0; i < IMAGE_COUNT; ++i) window.putFloat(i * 4, imageElement(i));
      expect(Arrays.equals(runTinyCnn(session, image), probabilities), "restored, the output is back");
      return "";
    }
  }

  private String tinyCnnFromArrays() throws Exception {
    float[] flat = new float[IMAGE_COUNT];
    for (int i = 0; i < IMAGE_COUNT; ++i) flat[i] = imageElement(i);
    try (OnyxSession session = tinyCnn(); OnnxTensor fromArray = OnnxTensor.createTensor(env, imageArray());
         OnnxTensor fromHeap = OnnxTensor.createTensor(env, FloatBuffer.wrap(flat), IMAGE_SHAPE)) {
      expect(Arrays.equals(fromArray.getInfo().getShape(), IMAGE_SHAPE), "the array's shape");
      expect(Arrays.equals(runTinyCnn(session, fromArray), probabilities), "float[1][3][32][32] gives the same output");
      expect(Arrays.equals(runTinyCnn(session, fromHeap), probabilities), "a heap FloatBuffer gives the same output");
      flat[0] = 100; // the heap buffer was copied: the tensor does not see this
      expect(Arrays.equals(runTinyCnn(session, fromHeap), probabilities), "the heap buffer was copied");
      return "";
    }
  }

  private String sessionFromBytes() throws Exception {
    byte[] model = Files.readAllBytes(model("tiny_cnn.onnx"));
    try (OnyxSession.SessionOptions options = oneThread(); OnyxSession session = env.createSession(model, options);
         OnnxTensor image = OnnxTensor.createTensor(env, imageArray())) {
      expect(Arrays.equals(runTinyCnn(session, image), probabilities), "the same output");
      return model.length + " bytes";
    }
  }

  private String concurrentRuns() throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(4);
    try (OnyxSession session = tinyCnn(); OnnxTensor image = OnnxTensor.createTensor(env, imageArray())) {
      List<Future<float[]>> runs = new ArrayList<>();
      for (int i = 0; i < 16; ++i) runs.add(pool.submit(() -> runTinyCnn(session, image)));
      for (Future<float[]> run : runs)
        expect(Arrays.equals(run.get(), probabilities), "every run gives the same output");
      return "16 runs on 4 threads";
    } finally {
      pool.shutdown();
    }
  }

  private String missingInput() throws Exception {
    try (OnyxSession session = tinyCnn()) {
      return expectError(
          () -> session.run(Collections.emptyMap()), OnyxException.OnyxErrorCode.ONYX_INVALID_ARGUMENT, "image");
    }
  }

  private String wrongShape() throws Exception {
    try (OnyxSession session = tinyCnn(); OnnxTensor small = OnnxTensor.createTensor(env, new float[1][3][16][16])) {
      return expectError(() -> session.run(Collections.singletonMap("image", small)), null, "");
    }
  }

  private String unknownOutput() throws Exception {
    try (OnyxSession session = tinyCnn(); OnnxTensor image = OnnxTensor.createTensor(env, imageArray())) {
      return expectError(
          ()
              -> session.run(Collections.singletonMap("image", image), Collections.singleton("no_such_output")),
          OnyxException.OnyxErrorCode.ONYX_INVALID_ARGUMENT, "no_such_output");
    }
  }

  private String wrongBufferSize() throws Exception {
    FloatBuffer small = ByteBuffer.allocateDirect(40).order(ByteOrder.nativeOrder()).asFloatBuffer();
    return expectError(()
                           -> OnnxTensor.createTensor(env, small, IMAGE_SHAPE),
        OnyxException.OnyxErrorCode.ONYX_INVALID_ARGUMENT, "needs");
  }

  private String runOptions() throws Exception {
    try (OnyxSession session = tinyCnn(); OnnxTensor image = OnnxTensor.createTensor(env, imageArray());
         OnyxSession.RunOptions options = new OnyxSession.RunOptions()) {
      options.setRunTag("java");
      expect(options.getRunTag().equals("java"), "the run tag");
      options.setLogLevel(OnyxLoggingLevel.ONYX_LOGGING_LEVEL_ERROR);
      expect(options.getLogLevel() == OnyxLoggingLevel.ONYX_LOGGING_LEVEL_ERROR, "the log level");
      options.setTerminate(true);
      String message =
          expectError(() -> session.run(Collections.singletonMap("image", image), options), null, "terminated");
      options.setTerminate(false);
      try (OnyxSession.Result result = session.run(Collections.singletonMap("image", image), options)) {
        expect(result.size() == 1, "runs again once the flag is cleared");
      }
      return "terminated run: " + message;
    }
  }

  private String metadata() throws Exception {
    try (OnyxSession session = tinyCnn()) {
      OnnxModelMetadata metadata = session.getMetadata();
      expect(metadata.getProducerName() != null && metadata.getGraphName() != null, "names");
      return metadata + ", custom keys " + metadata.getCustomMetadata().keySet();
    }
  }

  // ---- values without a model

  private String stringTensors() throws Exception {
    String[][] texts = {{"alpha", "βeta"}, {"", "emoji \uD83D\uDE00 and a NUL-free tail"}};
    try (OnnxTensor tensor = OnnxTensor.createTensor(env, texts);
         OnnxTensor scalar = OnnxTensor.createTensor(env, "one")) {
      TensorInfo info = tensor.getInfo();
      expect(info.type == OnnxJavaType.STRING && Arrays.equals(info.getShape(), new long[] {2, 2}), "info " + info);
      expect(Arrays.deepEquals((String[][]) tensor.getValue(), texts), "the strings back, UTF-8 intact");
      expect(!tensor.getBufferRef().isPresent() && tensor.getByteBuffer() == null, "no buffer for strings");
      expect(scalar.getValue().equals("one") && scalar.getInfo().isScalar(), "a string scalar");
      return Arrays.deepToString(texts);
    }
  }

  private String arrayRoundTrips() throws Exception {
    Object[] values = {
        new double[][] {{1.5, -2.25}, {Double.MAX_VALUE, Double.MIN_VALUE}},
        new long[] {Long.MIN_VALUE, 0, Long.MAX_VALUE},
        new int[][][] {{{1, 2, 3}}, {{4, 5, 6}}},
        new short[] {-1, 2},
        new byte[] {-128, 127},
        new boolean[][] {{true, false, true}},
        new float[0][3],
    };
    for (Object value : values) {
      try (OnnxTensor tensor = OnnxTensor.createTensor(env, value)) {
        expect(Arrays.deepEquals(new Object[] {tensor.getValue()}, new Object[] {value}), "round trip of " + tensor);
      }
    }
    try (OnnxTensor scalar = OnnxTensor.createTensor(env, 2.5f)) {
      expect(scalar.getValue().equals(2.5f) && scalar.getInfo().isScalar(), "a float scalar");
    }
    // Half floats: written as bits, read as float.
    ByteBuffer halves = ByteBuffer.allocateDirect(6).order(ByteOrder.nativeOrder());
    halves.asShortBuffer().put(new short[] {(short) 0x3c00, (short) 0xc000, (short) 0x0001});
    try (OnnxTensor half = OnnxTensor.createTensor(env, halves.asShortBuffer(), new long[] {3}, OnnxJavaType.FLOAT16)) {
      float[] read = (float[]) half.getValue();
      expect(read[0] == 1f && read[1] == -2f && read[2] == 0x1p-24f, "half floats " + Arrays.toString(read));
    }
    return values.length + 2 + " arrays and scalars";
  }

  private String closedObjects() throws Exception {
    OnnxTensor tensor = OnnxTensor.createTensor(env, new float[] {1, 2});
    tensor.close();
    tensor.close(); // a second close does nothing
    expect(tensor.isClosed(), "closed");
    boolean refused = false;
    try {
      tensor.getValue();
    } catch (IllegalStateException e) {
      refused = true;
    }
    expect(refused, "a closed tensor refuses getValue");
    OnyxSession session = tinyCnn();
    session.close();
    refused = false;
    try {
      session.getMetadata();
    } catch (IllegalStateException e) {
      refused = true;
    }
    expect(refused, "a closed session refuses use");
    return "";
  }

  private String missingLibrary() throws Exception {
    try (OnyxSession.SessionOptions options = new OnyxSession.SessionOptions()) {
      return expectError(() -> options.registerCustomOpLibrary("/nonexistent/libnothing.so"), null, "libnothing.so");
    }
  }

  // ---- models tests/python/test_java_api.py writes

  /**
   * The values model: text (string [n]) -> Identity -> text_out; a, b (float) ->
   *  SequenceConstruct -> pair; scores (float [1, 2]) -> ZipMap(10, 20) -> by_label.
   */
  private String valuesModel() throws Exception {
    try (OnyxSession.SessionOptions options = oneThread();
         OnyxSession session = env.createSession(args.get("values-model"), options);
         OnnxTensor text = OnnxTensor.createTensor(env, new String[] {"ünï", "code", ""});
         OnnxTensor a = OnnxTensor.createTensor(env, new float[] {1, 2});
         OnnxTensor b = OnnxTensor.createTensor(env, new float[] {3, 4, 5});
         OnnxTensor scores = OnnxTensor.createTensor(env, new float[][] {{0.25f, 0.75f}})) {
      Map<String, OnnxTensor> feeds = new LinkedHashMap<>();
      feeds.put("text", text);
      feeds.put("a", a);
      feeds.put("b", b);
      feeds.put("scores", scores);
      NodeInfo pairInfo = session.getOutputInfo().get("pair");
      expect(pairInfo.getInfo() instanceof SequenceInfo, "pair is a sequence: " + pairInfo);
      NodeInfo zipped = session.getOutputInfo().get("by_label");
      SequenceInfo zippedInfo = (SequenceInfo) zipped.getInfo();
      expect(zippedInfo.getElementInfo() instanceof MapInfo, "by_label is a sequence of maps: " + zipped);
      try (OnyxSession.Result result = session.run(feeds)) {
        OnnxTensor textOut = (OnnxTensor) result.get("text_out").get();
        expect(
            Arrays.equals((String[]) textOut.getValue(), new String[] {"ünï", "code", ""}), "strings through Identity");
        OnnxSequence pair = (OnnxSequence) result.get("pair").get();
        List<OnnxValue> elements = pair.getValue();
        expect(elements.size() == 2, "two elements");
        expect(Arrays.equals((float[]) elements.get(0).getValue(), new float[] {1, 2}), "first element");
        expect(Arrays.equals((float[]) elements.get(1).getValue(), new float[] {3, 4, 5}), "second element");
        OnnxSequence maps = (OnnxSequence) result.get("by_label").get();
        OnnxMap map = (OnnxMap) maps.getValue().get(0);
        Map<Object, Object> expected = new LinkedHashMap<>();
        expected.put(10L, 0.25f);
        expected.put(20L, 0.75f);
        expect(map.getValue().equals(expected), "ZipMap's map " + map.getValue());
        return "strings, " + pair.getInfo() + ", " + map.getValue();
      }
    }
  }

  private OnyxSession customOpSession() throws OnyxException {
    try (OnyxSession.SessionOptions options = oneThread()) {
      options.registerCustomOpLibrary(args.get("custom-op-library"));
      return env.createSession(args.get("custom-op-model"), options);
    }
  }

  private String customOps() throws Exception {
    float[][] x = {{0.5f, 1.0f, 1.5f}, {2.0f, 2.5f, 3.0f}};
    try (OnyxSession session = customOpSession(); OnnxTensor input = OnnxTensor.createTensor(env, x);
         OnyxSession.Result result = session.run(Collections.singletonMap("X", input))) {
      float[][] y = (float[][]) result.get("Y").get().getValue();
      float[][] z = (float[][]) result.get("Z").get().getValue();
      float[] flat = new float[6];
      for (int i = 0; i < 6; ++i) {
        float expected = (float) (2 * Math.tanh(x[i / 3][i % 3]));
        float got = y[i / 3][i % 3];
        expect(
            Math.abs(got - expected) <= 1e-6f * Math.abs(expected), "Y[" + i + "] = " + got + ", expected " + expected);
        expect(z[i / 3][i % 3] == x[i / 3][i % 3], "Z = X");
        flat[i] = got;
      }
      TensorInfo yInfo = (TensorInfo) session.getOutputInfo().get("Y").getInfo();
      expect(Arrays.equals(yInfo.getShape(), new long[] {2, 3}), "the op's shape inference: " + yInfo);
      outputs.put("Y", flat);
      return Arrays.toString(flat);
    }
  }

  private String failingCustomOp() throws Exception {
    float[][] x = {{1, 1, 1}, {1, 1, -2}};
    try (OnyxSession session = customOpSession(); OnnxTensor input = OnnxTensor.createTensor(env, x);
         OnnxTensor good = OnnxTensor.createTensor(env, new float[][] {{1, 2, 3}, {4, 5, 6}})) {
      String message = expectError(() -> session.run(Collections.singletonMap("X", input)), null, "'positive_check'");
      expect(message.contains("not positive"), "the op's own message: " + message);
      try (OnyxSession.Result result = session.run(Collections.singletonMap("X", good))) {
        expect(result.size() == 2, "the session still runs good input");
      }
      return message;
    }
  }
}

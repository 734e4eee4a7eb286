// The C# binding's checks, run by tests/python/test_csharp_api.py:
//
//   mono OnyxTest.exe MODEL_DIR [CUSTOM_OP_LIBRARY CUSTOM_OP_MODEL]
//
// MODEL_DIR holds tiny_cnn.onnx (the repository's models/); with the example
// custom-operator library and a model using it, those are checked too.
// Prints "ok: ..." per check, "FAILED: ..." for each that fails, and last
// the outputs the cross-language test compares ("output NAME: v0 v1 ...",
// 9 significant digits: float32 exactly). Exit status 1 when a check failed.
using System;
using System.Collections.Generic;
using System.Globalization;
using System.IO;
using System.Linq;
using System.Text;
using Onyx;
using Onyx.Tensors;

internal static class OnyxTest
{
    private static int failures;
    private static readonly List<string> outputLines = new List<string>();

    private static int Main(string[] args)
    {
        if (args.Length != 1 && args.Length != 3)
        {
            Console.Error.WriteLine("usage: mono OnyxTest.exe MODEL_DIR [CUSTOM_OP_LIBRARY CUSTOM_OP_MODEL]");
            return 2;
        }
        string tinyCnn = Path.Combine(args[0], "tiny_cnn.onnx");
        Check("versions and providers", CheckEnvironment);
        Check("tiny_cnn through OnyxValues", () => CheckTinyCnn(tinyCnn));
        Check("tiny_cnn through NamedOnnxValues", () => CheckNamedValues(tinyCnn));
        Check("runs from several threads", () => CheckConcurrentRuns(tinyCnn));
        Check("initializers from managed memory", CheckAddInitializer);
        Check("errors", () => CheckErrors(tinyCnn));
        Check("string tensors", CheckStrings);
        Check("sequences and maps", CheckSequencesAndMaps);
        Check("sequence and map outputs", CheckSequenceOfMapsOutput);
        Check("outputs that are views of an input", CheckViewsOfInputs);
        Check("disposal", () => CheckDisposal(tinyCnn));
        if (args.Length == 3)
        {
            Check("custom operator library", () => CheckCustomOps(args[1], args[2]));
        }
        foreach (string line in outputLines)
        {
            Console.WriteLine(line);
        }
        if (failures > 0)
        {
            Console.WriteLine(failures + " C# check(s) FAILED");
            return 1;
        }
        Console.WriteLine("all C# checks passed");
        return 0;
    }

    // ---- the harness ---------------------------------------------------------

    private static void Check(string name, Action check)
    {
        try
        {
            check();
        }
        catch (Exception e)
        {
            ++failures;
            Console.WriteLine("FAILED: " + name + ": " + e);
        }
    }

    private sealed class CheckFailed : Exception
    {
        public CheckFailed(string message) : base(message)
        {
        }
    }

    private static void Expect(bool condition, string what)
    {
        if (!condition)
        {
            throw new CheckFailed(what);
        }
    }

    private static void Ok(string what)
    {
        Console.WriteLine("ok: " + what);
    }

    /// <summary>`action` must throw an OnyxException of `code` (any code when null)
    /// whose message holds every one of `texts`.</summary>
    private static OnyxException ExpectError(Action action, ErrorCode? code, string what, params string[] texts)
    {
        try
        {
            action();
        }
        catch (OnyxException e)
        {
            Expect(code == null || e.ErrorCode == code,
                   what + ": error code " + e.ErrorCode + ", expected " + code + " (" + e.Message + ")");
            foreach (string text in texts)
            {
                Expect(e.StatusMessage.Contains(text), what + ": '" + e.StatusMessage + "' does not mention '" + text + "'");
            }
            Expect(e.Message == "[ErrorCode:" + e.ErrorCode + "] " + e.StatusMessage, what + ": message '" + e.Message + "'");
            Ok(what + " -> " + e.ErrorCode + ": " + e.StatusMessage);
            return e;
        }
        throw new CheckFailed(what + " succeeded; an OnyxException was expected");
    }

    private static string Format(IEnumerable<float> values)
    {
        // G9 gives every float32 back exactly when parsed (as C's %.9g).
        return string.Join(" ", values.Select(v => v.ToString("G9", CultureInfo.InvariantCulture)));
    }

    // ---- inputs --------------------------------------------------------------

    /// <summary>The input every language feeds tiny_cnn: exact in any floating point.</summary>
    private static float[] TinyCnnImage()
    {
        var image = new float[3 * 32 * 32];
        for (int i = 0; i < image.Length; ++i)
        {
            image[i] = ((i * 7) % 101 - 50) / 64.0f;
        }
        return image;
    }

    private static readonly long[] ImageShape = { 1, 3, 32, 32 };

    private static SessionOptions SingleThreadOptions()
    {
        var options = new SessionOptions();
        options.IntraOpNumThreads = 1;
        return options;
    }

    // ---- checks --------------------------------------------------------------

    private static void CheckEnvironment()
    {
        OnyxEnv env = OnyxEnv.Instance();
        Expect(env.GetVersionString().Length > 0, "a version string");
        Expect(env.GetBuildInfoString().Contains("onyx"), "build info names onyx");
        string[] providers = env.GetAvailableProviders();
        Expect(providers.Contains("CPUExecutionProvider"), "the CPU provider is available");
        Ok("libonyx " + env.GetVersionString() + ", providers " + string.Join(", ", providers));
    }

    private static void CheckTinyCnn(string model)
    {
        using (SessionOptions options = SingleThreadOptions())
        {
            options.GraphOptimizationLevel = GraphOptimizationLevel.ONYX_ENABLE_ALL;
            options.AddSessionConfigEntry("session.intra_op.allow_spinning", "0");
            Expect(options.IntraOpNumThreads == 1, "IntraOpNumThreads reads back");
            using (var session = new InferenceSession(model, options))
            {
                Expect(session.InputNames.SequenceEqual(new[] { "image" }), "input names: " + string.Join(",", session.InputNames));
                Expect(session.OutputNames.Count == 1, "one output");
                NodeMetadata input = session.InputMetadata["image"];
                Expect(input.IsTensor && input.ElementType == typeof(float) &&
                           input.ElementDataType == TensorElementType.Float, "image is a float tensor");
                Expect(input.Dimensions.SequenceEqual(new[] { -1, 3, 32, 32 }),
                       "image dimensions " + string.Join(",", input.Dimensions));
                Expect(input.SymbolicDimensions[0] == "batch" && input.SymbolicDimensions[1] == "",
                       "image's symbolic batch dimension");
                NodeMetadata output = session.OutputMetadata[session.OutputNames[0]];
                Expect(output.ElementType == typeof(float), "the output is float");
                Expect(session.GetProviders().Last() == "CPUExecutionProvider", "the session runs on the CPU provider");
                ModelMetadata metadata = session.ModelMetadata;
                Ok("metadata: image " + string.Join("x", input.SymbolicDimensions.Zip(input.Dimensions,
                                                                                      (s, d) => s != "" ? s : d.ToString())) +
                   ", output '" + session.OutputNames[0] + "' " + string.Join("x", output.Dimensions) +
                   ", producer '" + metadata.ProducerName + "', version " + metadata.Version);

                // The input over this array in place: a write through the value is
                // a write to the array.
                float[] image = TinyCnnImage();
                using (OnyxValue value = OnyxValue.CreateTensorValueFromMemory(image, ImageShape))
                using (var runOptions = new RunOptions())
                {
                    Span<float> view = value.GetTensorMutableDataAsSpan<float>();
                    float first = image[0];
                    view[0] = 123.0f;
                    Expect(image[0] == 123.0f, "the value's memory is the array's (no copy)");
                    image[0] = first;
                    Expect(value.GetTensorTypeAndShape().Shape.SequenceEqual(ImageShape), "the value's shape");
                    Ok("a tensor over a pinned float[] without a copy");

                    runOptions.LogId = "csharp";
                    Expect(runOptions.LogId == "csharp", "RunOptions.LogId reads back");
                    string[] outputNames = { session.OutputNames[0] };
                    float[] probabilities;
                    using (IDisposableReadOnlyCollection<OnyxValue> outputs =
                               session.Run(runOptions, new[] { "image" }, new[] { value }, outputNames))
                    {
                        ReadOnlySpan<float> data = outputs[0].GetTensorDataAsSpan<float>();
                        probabilities = data.ToArray();
                        Expect(outputs[0].GetTensorTypeAndShape().Shape.SequenceEqual(new long[] { 1, 10 }),
                               "probabilities are [1, 10]");
                    }
                    double sum = probabilities.Sum(p => (double)p);
                    Expect(Math.Abs(sum - 1.0) < 1e-5, "softmax probabilities sum to 1, not " + sum);
                    Ok("tiny_cnn runs, " + probabilities.Length + " probabilities summing to " +
                       sum.ToString("F6", CultureInfo.InvariantCulture));
                    outputLines.Add("output probabilities: " + Format(probabilities));

                    // An output the caller allocated is written in place.
                    using (OnyxValue preallocated = OnyxValue.CreateAllocatedTensorValue(
                               OnyxAllocator.DefaultInstance, TensorElementType.Float, new long[] { 1, 10 }))
                    {
                        session.Run(runOptions, new[] { "image" }, new[] { value }, outputNames, new[] { preallocated });
                        Expect(preallocated.GetTensorDataAsSpan<float>().ToArray().SequenceEqual(probabilities),
                               "the pre-allocated output holds the same probabilities");
                    }
                    // The dictionary overload.
                    var feeds = new Dictionary<string, OnyxValue> { { "image", value } };
                    using (IDisposableReadOnlyCollection<OnyxValue> outputs = session.Run(runOptions, feeds, outputNames))
                    {
                        Expect(outputs[0].GetTensorDataAsSpan<float>().ToArray().SequenceEqual(probabilities),
                               "the dictionary overload gives the same probabilities");
                    }
                    Ok("a pre-allocated output is filled; the dictionary overload agrees");
                }
            }
        }
    }

    private static void CheckNamedValues(string model)
    {
        using (SessionOptions options = SingleThreadOptions())
        using (var session = new InferenceSession(model, options))
        {
            float[] image = TinyCnnImage();
            var tensor = new DenseTensor<float>(image, new[] { 1, 3, 32, 32 });
            var inputs = new List<NamedOnnxValue> { NamedOnnxValue.CreateFromTensor("image", tensor) };
            float[] first;
            using (IDisposableReadOnlyCollection<DisposableNamedOnnxValue> results = session.Run(inputs))
            {
                Expect(results.Count == 1 && results[0].Name == session.OutputNames[0], "one named output");
                Tensor<float> probabilities = results[0].AsTensor<float>();
                Expect(probabilities.Dimensions.ToArray().SequenceEqual(new[] { 1, 10 }), "a [1, 10] tensor");
                Expect(Math.Abs(probabilities[0, 3] - probabilities.GetValue(3)) == 0, "indexing agrees with GetValue");
                first = probabilities.ToArray();
            }
            // Through the OnyxValue API: the same bits.
            using (OnyxValue value = OnyxValue.CreateTensorValueFromMemory(image, ImageShape))
            using (IDisposableReadOnlyCollection<OnyxValue> outputs =
                       session.Run(null, new[] { "image" }, new[] { value }, session.OutputNames.ToArray()))
            {
                Expect(outputs[0].GetTensorDataAsSpan<float>().ToArray().SequenceEqual(first),
                       "NamedOnnxValue and OnyxValue runs give the same probabilities");
            }
            Ok("NamedOnnxValue run over a DenseTensor matches the OnyxValue run bit for bit");
        }
    }

    private static void CheckConcurrentRuns(string model)
    {
        // InferenceSession.Run is thread-safe: four threads, one session, each
        // its own input and output, all giving the single-threaded result.
        using (var session = new InferenceSession(model))
        {
            float[] image = TinyCnnImage();
            float[] expected;
            using (OnyxValue value = OnyxValue.CreateTensorValueFromMemory(image, ImageShape))
            using (var outputs = session.Run(null, new[] { "image" }, new[] { value }, session.OutputNames.ToArray()))
            {
                expected = outputs[0].GetTensorDataAsSpan<float>().ToArray();
            }
            var errors = new List<Exception>();
            var threads = Enumerable.Range(0, 4).Select(t => new System.Threading.Thread(() =>
            {
                try
                {
                    for (int i = 0; i < 10; ++i)
                    {
                        using (OnyxValue value = OnyxValue.CreateTensorValueFromMemory(TinyCnnImage(), ImageShape))
                        using (var outputs = session.Run(null, new[] { "image" }, new[] { value }, session.OutputNames.ToArray()))
                        {
                            if (!outputs[0].GetTensorDataAsSpan<float>().ToArray().SequenceEqual(expected))
                            {
                                throw new CheckFailed("thread " + t + " run " + i + " differs");
                            }
                        }
                    }
                }
                catch (Exception e)
                {
                    lock (errors)
                    {
                        errors.Add(e);
                    }
                }
            })).ToList();
            threads.ForEach(t => t.Start());
            threads.ForEach(t => t.Join());
            Expect(errors.Count == 0, "concurrent runs: " + string.Join("; ", errors));
        }
        Ok("4 threads x 10 runs of one session agree");
    }

    private static void CheckAddInitializer()
    {
        // y = x + w, w an initializer of ones in the model, replaced by one over
        // a managed array that stays pinned while the session lives, although
        // the value and the options are disposed first.
        float[] w = { 10, 20, 30, 40 };
        InferenceSession session;
        using (var options = new SessionOptions())
        {
            using (OnyxValue weights = OnyxValue.CreateTensorValueFromMemory(w, new long[] { 4 }))
            {
                options.AddInitializer("w", weights);
            }
            session = new InferenceSession(TinyModels.AddInitializer(), options);
        }
        using (session)
        {
            GC.Collect();
            GC.WaitForPendingFinalizers();
            var x = new DenseTensor<float>(new[] { 1.0f, 2.0f, 3.0f, 4.0f }, new[] { 4 });
            using (var results = session.Run(new[] { NamedOnnxValue.CreateFromTensor("x", x) }))
            {
                float[] y = results[0].AsTensor<float>().ToArray();
                Expect(y.SequenceEqual(new[] { 11.0f, 22.0f, 33.0f, 44.0f }), "y = x + the added initializer: " + string.Join(",", y));
            }
        }
        Ok("SessionOptions.AddInitializer over a managed array");
    }

    private static void CheckErrors(string model)
    {
        using (SessionOptions options = SingleThreadOptions())
        using (var session = new InferenceSession(model, options))
        using (var runOptions = new RunOptions())
        {
            string[] outputNames = session.OutputNames.ToArray();
            ExpectError(() => session.Run(runOptions, new string[0], new OnyxValue[0], outputNames).Dispose(),
                        ErrorCode.InvalidArgument, "a run without its input", "image");
            ExpectError(() => session.Run(new List<NamedOnnxValue>()).Dispose(), ErrorCode.InvalidArgument,
                        "a NamedOnnxValue run without its input", "image");
            float[] image = TinyCnnImage();
            using (OnyxValue value = OnyxValue.CreateTensorValueFromMemory(image, ImageShape))
            {
                ExpectError(() => session.Run(runOptions, new[] { "image" }, new[] { value }, new[] { "no_such_output" }).Dispose(),
                            ErrorCode.InvalidArgument, "a run for an unknown output", "no_such_output");
                runOptions.Terminate = true;
                try
                {
                    session.Run(runOptions, new[] { "image" }, new[] { value }, outputNames).Dispose();
                    throw new CheckFailed("a run with Terminate set succeeded");
                }
                catch (OnyxException e)
                {
                    Expect(e.StatusMessage.Contains("terminated"), "the terminated run says so: " + e.Message);
                    Ok("RunOptions.Terminate stops a run -> " + e.StatusMessage);
                }
                runOptions.Terminate = false;
                session.Run(runOptions, new[] { "image" }, new[] { value }, outputNames).Dispose();
                ExpectError(() => value.GetTensorDataAsSpan<long>().ToArray(), ErrorCode.InvalidArgument,
                            "reading float elements as long", "Float");
            }
            var wrongType = new long[3 * 32 * 32];
            using (OnyxValue value = OnyxValue.CreateTensorValueFromMemory(wrongType, ImageShape))
            {
                ExpectError(() => session.Run(runOptions, new[] { "image" }, new[] { value }, outputNames).Dispose(),
                            ErrorCode.InvalidArgument, "an int64 image", "image");
            }
            ExpectError(() => OnyxValue.CreateTensorValueFromMemory(new float[16], ImageShape).Dispose(),
                        ErrorCode.InvalidArgument, "a tensor over too small an array", "needs");
        }
        ExpectError(() => new InferenceSession("/no/such/model.onnx").Dispose(), ErrorCode.NoSuchFile,
                    "a missing model file", "no model file");
        try
        {
            new InferenceSession(Encoding.UTF8.GetBytes("this is not an onnx model")).Dispose();
            throw new CheckFailed("a malformed model loaded");
        }
        catch (OnyxException e)
        {
            Ok("a malformed model -> " + e.Message);
        }
        using (var options = new SessionOptions())
        {
            ExpectError(() => options.IntraOpNumThreads = -1, ErrorCode.InvalidArgument, "a negative thread count",
                        "intra_op_num_threads");
            options.AppendExecutionProvider("NoSuchExecutionProvider");
            try
            {
                new InferenceSession(TinyModels.StringIdentity(), options).Dispose();
                throw new CheckFailed("a session with an unknown provider was created");
            }
            catch (OnyxException e)
            {
                Expect(e.StatusMessage.Contains("NoSuchExecutionProvider"), "the unknown provider is named: " + e.Message);
                Ok("an unknown execution provider -> " + e.StatusMessage);
            }
        }
    }

    private static void CheckStrings()
    {
        string[] words = { "onyx", "", "runs", "ünïcödé ✓" };
        var tensor = new DenseTensor<string>(words, new[] { 2, 2 });
        using (OnyxValue value = OnyxValue.CreateFromStringTensor(tensor))
        {
            Expect(value.GetTensorTypeAndShape().IsString, "a string tensor");
            Expect(value.GetStringTensorAsArray().SequenceEqual(words), "the strings read back (UTF-8 both ways)");
            value.StringTensorSetElementAt("set", 1);
            Expect(value.GetStringElement(1) == "set", "StringTensorSetElementAt");
        }
        // Strings through a model (made from bytes: CreateSessionFromArray), in
        // and out as NamedOnnxValues.
        using (var session = new InferenceSession(TinyModels.StringIdentity()))
        {
            Expect(session.InputMetadata["x"].IsString, "the model's input is a string tensor");
            var inputs = new[] { NamedOnnxValue.CreateFromTensor("x", new DenseTensor<string>(words.Take(3).ToArray(), new[] { 3 })) };
            using (var results = session.Run(inputs))
            {
                Expect(results[0].AsTensor<string>().ToArray().SequenceEqual(words.Take(3)), "strings come back from Identity");
            }
        }
        Ok("string tensors: made, filled, read back, and run through Identity");
    }

    private static void CheckSequencesAndMaps()
    {
        float[] a = { 1, 2 };
        float[] b = { 3, 4, 5 };
        long[] keys = { 10, 20 };
        using (OnyxValue first = OnyxValue.CreateTensorValueFromMemory(a, new long[] { 2 }))
        using (OnyxValue second = OnyxValue.CreateTensorValueFromMemory(b, new long[] { 3 }))
        using (OnyxValue sequence = OnyxValue.CreateSequence(new[] { first, second }))
        {
            Expect(sequence.OnnxType == OnnxValueType.ONNX_TYPE_SEQUENCE && sequence.GetValueCount() == 2, "a sequence of 2");
            using (OnyxValue element = sequence.GetValue(1, OnyxAllocator.DefaultInstance))
            {
                Expect(element.GetTensorDataAsSpan<float>().ToArray().SequenceEqual(b), "the sequence's second tensor");
            }
            ExpectError(() => sequence.GetValue(2, OnyxAllocator.DefaultInstance).Dispose(), ErrorCode.InvalidArgument,
                        "GetValue past a sequence's end", "out of range");
            using (OnyxValue keyValue = OnyxValue.CreateTensorValueFromMemory(keys, new long[] { 2 }))
            using (OnyxValue map = OnyxValue.CreateMap(keyValue, first))
            {
                Expect(map.OnnxType == OnnxValueType.ONNX_TYPE_MAP && map.GetValueCount() == 2, "a map");
                using (OnyxValue mapKeys = map.GetValue(0, OnyxAllocator.DefaultInstance))
                {
                    Expect(mapKeys.GetTensorDataAsSpan<long>().ToArray().SequenceEqual(keys), "the map's keys");
                }
            }
        }
        Ok("sequences and maps");
    }

    private static void CheckSequenceOfMapsOutput()
    {
        // ZipMap (ai.onnx.ml) returns a sequence of maps: a list of
        // DisposableNamedOnnxValues, each holding a Dictionary<long, float>.
        using (var session = new InferenceSession(TinyModels.ZipMap()))
        {
            Expect(session.OutputMetadata["z"].OnnxValueType == OnnxValueType.ONNX_TYPE_SEQUENCE, "z is a sequence");
            var scores = new DenseTensor<float>(new[] { 0.25f, 0.75f, 0.5f, 0.125f }, new[] { 2, 2 });
            using (var results = session.Run(new[] { NamedOnnxValue.CreateFromTensor("x", scores) }))
            {
                var rows = results[0].AsEnumerable<DisposableNamedOnnxValue>().ToList();
                Expect(rows.Count == 2, "two rows");
                IDictionary<long, float> second = rows[1].AsDictionary<long, float>();
                Expect(second != null && second.Count == 2 && second[10] == 0.5f && second[20] == 0.125f,
                       "the second row's map");
            }
            using (OnyxValue x = OnyxValue.CreateTensorValueFromMemory(new[] { 1.0f, 2.0f }, new long[] { 1, 2 }))
            using (var outputs = session.Run(null, new[] { "x" }, new[] { x }, new[] { "z" }))
            using (OnyxValue map = outputs[0].GetValue(0, OnyxAllocator.DefaultInstance))
            using (OnyxValue values = map.GetValue(1, OnyxAllocator.DefaultInstance))
            {
                Expect(map.OnnxType == OnnxValueType.ONNX_TYPE_MAP, "a map in the sequence");
                Expect(values.GetTensorDataAsSpan<float>().ToArray().SequenceEqual(new[] { 1.0f, 2.0f }), "the map's values");
            }
        }
        Ok("a sequence of maps (ZipMap) as a list of dictionaries and as OnyxValues");
    }

    private static void CheckViewsOfInputs()
    {
        // Identity's output may be a view of the input: it must stay valid (the
        // array pinned) after the input value is disposed.
        using (var session = new InferenceSession(TinyModels.FloatIdentity()))
        {
            float[] x = { 1.5f, -2.25f, 3.0f, 4.5f };
            OnyxValue input = OnyxValue.CreateTensorValueFromMemory(x, new long[] { 4 });
            using (IDisposableReadOnlyCollection<OnyxValue> outputs = session.Run(null, new[] { "x" }, new[] { input }, new[] { "y" }))
            {
                Span<float> y = outputs[0].GetTensorMutableDataAsSpan<float>();
                y[0] = 7.0f;
                bool view = x[0] == 7.0f;
                input.Dispose();
                GC.Collect();
                GC.WaitForPendingFinalizers();
                GC.Collect();
                float[] read = outputs[0].GetTensorDataAsSpan<float>().ToArray();
                Expect(read.SequenceEqual(new[] { 7.0f, -2.25f, 3.0f, 4.5f }), "the output after its input was disposed");
                Ok(view ? "Identity's output is a view of the input array, which stays pinned while the output lives"
                        : "Identity's output is a copy of the input");
            }
        }
    }

    private static void CheckDisposal(string model)
    {
        // Values, options and sessions left to the finalizers release themselves.
        for (int i = 0; i < 50; ++i)
        {
            OnyxValue.CreateTensorValueFromMemory(new float[16], new long[] { 4, 4 });
            new RunOptions();
            new SessionOptions();
        }
        new InferenceSession(model);
        GC.Collect();
        GC.WaitForPendingFinalizers();
        var options = new SessionOptions();
        options.Dispose();
        options.Dispose();
        try
        {
            options.IntraOpNumThreads = 1;
            throw new CheckFailed("options used after Dispose");
        }
        catch (ObjectDisposedException)
        {
        }
        Ok("Dispose twice is harmless, use after Dispose throws, finalizers release what was not disposed");
    }

    private static void CheckCustomOps(string library, string model)
    {
        using (var options = new SessionOptions())
        {
            ExpectError(() => options.RegisterCustomOpLibrary("/no/such/library.so"), ErrorCode.NoSuchFile,
                        "a missing custom op library", "cannot load");
        }
        using (SessionOptions options = SingleThreadOptions())
        {
            options.RegisterCustomOpLibrary(library);
            using (var session = new InferenceSession(model, options))
            {
                // Y = 2 tanh(X) (ScaledTanh, scale 2), Z = X (CheckPositive); X float [2, 3].
                float[] x = { 0.5f, 1.0f, 1.5f, 2.0f, 2.5f, 3.0f };
                var inputs = new[] { NamedOnnxValue.CreateFromTensor("X", new DenseTensor<float>(x, new[] { 2, 3 })) };
                using (var results = session.Run(inputs))
                {
                    float[] y = results.First(r => r.Name == "Y").AsTensor<float>().ToArray();
                    float[] z = results.First(r => r.Name == "Z").AsTensor<float>().ToArray();
                    for (int i = 0; i < x.Length; ++i)
                    {
                        double expected = 2 * Math.Tanh(x[i]);
                        Expect(Math.Abs(y[i] - expected) <= 1e-6 * Math.Abs(expected), "Y[" + i + "] = " + y[i] + ", expected " + expected);
                    }
                    Expect(z.SequenceEqual(x), "Z = X");
                    outputLines.Add("output Y: " + Format(y));
                }
                Expect(session.OutputMetadata["Y"].Dimensions.SequenceEqual(new[] { 2, 3 }),
                       "the custom op's shape inference reaches the metadata");
                Ok("the custom op library runs: Y = 2 tanh(X), Z = X");

                x[4] = -1.0f;
                using (OnyxValue value = OnyxValue.CreateTensorValueFromMemory(x, new long[] { 2, 3 }))
                {
                    // Fail, as onnxruntime reports a kernel's failure during a run,
                    // whatever code the op's own status had (InvalidArgument here).
                    ExpectError(
                        () => session.Run(null, new[] { "X" }, new[] { value }, new[] { "Y", "Z" }).Dispose(),
                        ErrorCode.Fail, "a custom op that fails", "'positive_check'", "element 4 is -1, not positive");
                }
                x[4] = 2.5f;
                session.Run(inputs).Dispose();
                Ok("the session still runs after the custom op's error");
            }
        }
    }
}

/// <summary>Small ONNX models written as protobuf bytes here, so that the
/// runner needs no files beyond tiny_cnn and the custom-op model.</summary>
internal static class TinyModels
{
    private const int Float = 1;
    private const int String = 8;

    /// <summary>y = Identity(x), x and y string [3].</summary>
    public static byte[] StringIdentity()
    {
        return Identity(String, 3);
    }

    /// <summary>y = Identity(x), x and y float [4].</summary>
    public static byte[] FloatIdentity()
    {
        return Identity(Float, 4);
    }

    /// <summary>z = ZipMap(x, classlabels_int64s=[10, 20]); x float [N, 2], z
    /// seq(map(int64, float)).</summary>
    public static byte[] ZipMap()
    {
        byte[] attribute = Concat(Bytes(1, "classlabels_int64s"), Varint(8, 10), Varint(8, 20), Varint(20, 7 /* INTS */));
        byte[] node = Concat(Bytes(1, "x"), Bytes(2, "z"), Bytes(4, "ZipMap"), Bytes(5, attribute), Bytes(7, "ai.onnx.ml"));
        byte[] inputShape = Concat(Bytes(1, Bytes(2, "N")), Bytes(1, Varint(1, 2)));
        byte[] inputType = Bytes(1, Concat(Varint(1, Float), Bytes(2, inputShape)));
        byte[] floatTensor = Bytes(1, Varint(1, Float));
        byte[] mapType = Bytes(5, Concat(Varint(1, 7 /* int64 */), Bytes(2, floatTensor)));
        byte[] outputType = Bytes(4, Bytes(1, mapType));
        byte[] graph = Concat(Bytes(1, node), Bytes(2, "zipmap"), Bytes(11, Concat(Bytes(1, "x"), Bytes(2, inputType))),
                              Bytes(12, Concat(Bytes(1, "z"), Bytes(2, outputType))));
        return Concat(Varint(1, 8), Bytes(7, graph), Bytes(8, Concat(Bytes(1, ""), Varint(2, 17))),
                      Bytes(8, Concat(Bytes(1, "ai.onnx.ml"), Varint(2, 1))));
    }

    /// <summary>y = Add(x, w), x and y float [4], w an initializer of ones.</summary>
    public static byte[] AddInitializer()
    {
        byte[] node = Concat(Bytes(1, "x"), Bytes(1, "w"), Bytes(2, "y"), Bytes(4, "Add"));
        var ones = new byte[16];
        for (int i = 0; i < 4; ++i)
        {
            BitConverter.GetBytes(1.0f).CopyTo(ones, 4 * i);
        }
        // TensorProto: dims 1, data_type 2, name 8, raw_data 9 (little-endian).
        byte[] initializer = Concat(Varint(1, 4), Varint(2, Float), Bytes(8, "w"), Bytes(9, ones));
        byte[] graph = Concat(Bytes(1, node), Bytes(2, "add"), Bytes(5, initializer),
                              Bytes(11, ValueInfo("x", Float, 4)), Bytes(12, ValueInfo("y", Float, 4)));
        return Concat(Varint(1, 8), Bytes(7, graph), Bytes(8, Concat(Bytes(1, ""), Varint(2, 17))));
    }

    private static byte[] Identity(int elementType, long size)
    {
        byte[] node = Concat(Bytes(1, "x"), Bytes(2, "y"), Bytes(4, "Identity"));
        byte[] graph = Concat(Bytes(1, node), Bytes(2, "identity"), Bytes(11, ValueInfo("x", elementType, size)),
                              Bytes(12, ValueInfo("y", elementType, size)));
        byte[] opset = Concat(Bytes(1, ""), Varint(2, 17));
        // ModelProto: ir_version 1, graph 7, opset_import 8.
        return Concat(Varint(1, 8), Bytes(7, graph), Bytes(8, opset));
    }

    private static byte[] ValueInfo(string name, int elementType, long size)
    {
        byte[] dim = Varint(1, size);
        byte[] shape = Bytes(1, dim);
        byte[] tensorType = Concat(Varint(1, elementType), Bytes(2, shape));
        byte[] type = Bytes(1, tensorType);
        return Concat(Bytes(1, name), Bytes(2, type));
    }

    private static byte[] Varint(int field, long value)
    {
        return Concat(Key(field, 0), EncodeVarint((ulong)value));
    }

    private static byte[] Bytes(int field, string text)
    {
        return Bytes(field, Encoding.UTF8.GetBytes(text));
    }

    private static byte[] Bytes(int field, byte[] payload)
    {
        return Concat(Key(field, 2), EncodeVarint((ulong)payload.Length), payload);
    }

    private static byte[] Key(int field, int wireType)
    {
        return EncodeVarint((ulong)((field << 3) | wireType));
    }

    private static byte[] EncodeVarint(ulong value)
    {
        var bytes = new List<byte>();
        do
        {
            byte b = (byte)(value & 0x7f);
            value >>= 7;
            bytes.Add(value != 0 ? (byte)(b | 0x80) : b);
        } while (value != 0);
        return bytes.ToArray();
    }

    private static byte[] Concat(params byte[][] parts)
    {
        return parts.SelectMany(p => p).ToArray();
    }
}

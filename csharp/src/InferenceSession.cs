// A model ready to run (onnxruntime's InferenceSession): made from a file or
// bytes, run with NamedOnnxValues or OnyxValues, thread-safe to run.
using System;
using System.Collections.Generic;
using System.Linq;

namespace Onyx
{
    public class InferenceSession : IDisposable
    {
        private readonly NativeHandle handle;
        private readonly List<MemoryPin> initializerPins = new List<MemoryPin>();
        private readonly Dictionary<string, NodeMetadata> inputMetadata = new Dictionary<string, NodeMetadata>();
        private readonly Dictionary<string, NodeMetadata> outputMetadata = new Dictionary<string, NodeMetadata>();
        private readonly Dictionary<string, NodeMetadata> overridableInitializerMetadata =
            new Dictionary<string, NodeMetadata>();
        private readonly List<string> inputNames = new List<string>();
        private readonly List<string> outputNames = new List<string>();
        private ModelMetadata modelMetadata;

        public InferenceSession(string modelPath) : this(modelPath, null)
        {
        }

        public InferenceSession(string modelPath, SessionOptions options)
        {
            IntPtr session;
            NativeApiStatus.VerifySuccess(NativeMethods.CreateSession(
                OnyxEnv.Instance().Pointer, NativeStrings.ToUtf8(modelPath), OptionsPointer(options), out session));
            handle = new NativeHandle(session, NativeMethods.ReleaseSession);
            Initialize(options);
        }

        public InferenceSession(byte[] model) : this(model, null)
        {
        }

        public InferenceSession(byte[] model, SessionOptions options)
        {
            IntPtr session;
            NativeApiStatus.VerifySuccess(NativeMethods.CreateSessionFromArray(
                OnyxEnv.Instance().Pointer, model, new UIntPtr((uint)model.Length), OptionsPointer(options),
                out session));
            handle = new NativeHandle(session, NativeMethods.ReleaseSession);
            Initialize(options);
        }

        private static IntPtr OptionsPointer(SessionOptions options)
        {
            return options == null ? IntPtr.Zero : options.Handle;
        }

        private void Initialize(SessionOptions options)
        {
            if (options != null)
            {
                foreach (MemoryPin pin in options.Pins)
                {
                    initializerPins.Add(pin.AddReference());
                }
                GC.KeepAlive(options);
            }
            ReadMetadata(NativeMethods.SessionGetInputCount, NativeMethods.SessionGetInputName,
                         NativeMethods.SessionGetInputTypeInfo, inputNames, inputMetadata);
            ReadMetadata(NativeMethods.SessionGetOutputCount, NativeMethods.SessionGetOutputName,
                         NativeMethods.SessionGetOutputTypeInfo, outputNames, outputMetadata);
            ReadMetadata(NativeMethods.SessionGetOverridableInitializerCount,
                         NativeMethods.SessionGetOverridableInitializerName,
                         NativeMethods.SessionGetOverridableInitializerTypeInfo, null, overridableInitializerMetadata);
        }

        private void ReadMetadata(NativeMethods.DGetSize getCount, NativeMethods.DGetIndexedString getName,
                                  NativeMethods.DGetIndexedHandle getTypeInfo, List<string> names,
                                  Dictionary<string, NodeMetadata> metadata)
        {
            UIntPtr count;
            NativeApiStatus.VerifySuccess(getCount(Handle, out count));
            IntPtr allocator = OnyxAllocator.DefaultInstance.Pointer;
            for (uint i = 0; i < count.ToUInt32(); ++i)
            {
                IntPtr name;
                NativeApiStatus.VerifySuccess(getName(Handle, new UIntPtr(i), allocator, out name));
                string managedName = NativeStrings.TakeAllocated(name);
                IntPtr typeInfo;
                NativeApiStatus.VerifySuccess(getTypeInfo(Handle, new UIntPtr(i), out typeInfo));
                metadata[managedName] = NodeMetadata.TakeTypeInfo(typeInfo);
                if (names != null)
                {
                    names.Add(managedName);
                }
            }
        }

        internal IntPtr Handle { get { return handle.Pointer; } }

        public IReadOnlyDictionary<string, NodeMetadata> InputMetadata { get { return inputMetadata; } }
        public IReadOnlyDictionary<string, NodeMetadata> OutputMetadata { get { return outputMetadata; } }
        public IReadOnlyDictionary<string, NodeMetadata> OverridableInitializerMetadata
        {
            get { return overridableInitializerMetadata; }
        }
        /// <summary>The inputs' names in the model's order.</summary>
        public IReadOnlyList<string> InputNames { get { return inputNames; } }
        public IReadOnlyList<string> OutputNames { get { return outputNames; } }

        public ModelMetadata ModelMetadata
        {
            get
            {
                if (modelMetadata == null)
                {
                    IntPtr metadata;
                    NativeApiStatus.VerifySuccess(NativeMethods.SessionGetModelMetadata(Handle, out metadata));
                    try
                    {
                        modelMetadata = new ModelMetadata(metadata);
                    }
                    finally
                    {
                        NativeMethods.ReleaseModelMetadata(metadata);
                    }
                }
                return modelMetadata;
            }
        }

        /// <summary>The providers this session runs on, in order ("CPUExecutionProvider" last).</summary>
        public string[] GetProviders()
        {
            IntPtr names;
            int count;
            NativeApiStatus.VerifySuccess(NativeMethods.SessionGetProviders(Handle, out names, out count));
            return OnyxEnv.TakeProviderNames(names, count, NativeMethods.ReleaseAvailableProviders);
        }

        // ---- Runs with NamedOnnxValues -------------------------------------------

        /// <summary>Runs the model for every output.</summary>
        public IDisposableReadOnlyCollection<DisposableNamedOnnxValue> Run(IReadOnlyCollection<NamedOnnxValue> inputs)
        {
            return Run(inputs, outputNames, null);
        }

        public IDisposableReadOnlyCollection<DisposableNamedOnnxValue> Run(IReadOnlyCollection<NamedOnnxValue> inputs,
                                                                           IReadOnlyCollection<string> outputNames)
        {
            return Run(inputs, outputNames, null);
        }

        /// <summary>Runs the model. Tensor inputs over managed memory are fed in
        /// place; outputs are tensors over onyx's memory, valid until the result
        /// is disposed.</summary>
        public IDisposableReadOnlyCollection<DisposableNamedOnnxValue> Run(IReadOnlyCollection<NamedOnnxValue> inputs,
                                                                           IReadOnlyCollection<string> outputNames,
                                                                           RunOptions options)
        {
            var names = new List<string>(inputs.Count);
            var values = new DisposableList<OnyxValue>(inputs.Count);
            try
            {
                foreach (NamedOnnxValue input in inputs)
                {
                    names.Add(input.Name);
                    values.Add(input.ToOnyxValue());
                }
                using (IDisposableReadOnlyCollection<OnyxValue> outputs = Run(options, names, values, outputNames))
                {
                    var result = new DisposableList<DisposableNamedOnnxValue>(outputs.Count);
                    var owned = (DisposableList<OnyxValue>)outputs;
                    int i = 0;
                    try
                    {
                        foreach (string name in outputNames)
                        {
                            // The named value owns the OnyxValue from here on.
                            OnyxValue value = owned[i];
                            owned[i++] = null;
                            result.Add(DisposableNamedOnnxValue.CreateFromOnyxValue(name, value));
                        }
                    }
                    catch
                    {
                        result.Dispose();
                        throw;
                    }
                    return result;
                }
            }
            finally
            {
                // Outputs that are views of an input hold their own pin of its memory.
                values.Dispose();
            }
        }

        // ---- Runs with OnyxValues ------------------------------------------------

        /// <summary>Runs the model on `inputValues` (named by `inputNames`, in that
        /// order) and returns the outputs named, for the caller to dispose.</summary>
        public IDisposableReadOnlyCollection<OnyxValue> Run(RunOptions runOptions, IReadOnlyCollection<string> inputNames,
                                                            IReadOnlyCollection<OnyxValue> inputValues,
                                                            IReadOnlyCollection<string> outputNames)
        {
            var outputs = new IntPtr[outputNames.Count];
            RunNative(runOptions, inputNames, inputValues, outputNames, outputs);
            var result = new DisposableList<OnyxValue>(outputs.Length);
            foreach (IntPtr output in outputs)
            {
                result.Add(new OnyxValue(output));
            }
            // An output that is a view of an input's managed memory (Identity,
            // Reshape) keeps that memory pinned for as long as it lives.
            foreach (OnyxValue output in result)
            {
                if (!output.IsTensor)
                {
                    continue;
                }
                IntPtr data = output.DataPointer();
                foreach (OnyxValue input in inputValues)
                {
                    foreach (MemoryPin pin in input.Pins)
                    {
                        if (pin.Contains(data))
                        {
                            output.SharePin(pin);
                        }
                    }
                }
            }
            return result;
        }

        public IDisposableReadOnlyCollection<OnyxValue> Run(RunOptions runOptions,
                                                            IReadOnlyDictionary<string, OnyxValue> inputs,
                                                            IReadOnlyCollection<string> outputNames)
        {
            return Run(runOptions, inputs.Keys.ToList(), inputs.Values.ToList(), outputNames);
        }

        /// <summary>Runs the model writing the outputs into `outputValues`,
        /// tensors of the outputs' types and shapes the caller made.</summary>
        public void Run(RunOptions runOptions, IReadOnlyCollection<string> inputNames,
                        IReadOnlyCollection<OnyxValue> inputValues, IReadOnlyCollection<string> outputNames,
                        IReadOnlyCollection<OnyxValue> outputValues)
        {
            if (outputValues.Count != outputNames.Count)
            {
                throw new ArgumentException(outputNames.Count + " output names and " + outputValues.Count +
                                            " output values");
            }
            IntPtr[] outputs = outputValues.Select(v => v.Handle).ToArray();
            RunNative(runOptions, inputNames, inputValues, outputNames, outputs);
            GC.KeepAlive(outputValues);
        }

        private void RunNative(RunOptions runOptions, IReadOnlyCollection<string> inputNames,
                               IReadOnlyCollection<OnyxValue> inputValues, IReadOnlyCollection<string> outputNames,
                               IntPtr[] outputs)
        {
            if (inputNames.Count != inputValues.Count)
            {
                throw new ArgumentException(inputNames.Count + " input names and " + inputValues.Count +
                                            " input values");
            }
            IntPtr[] inputs = inputValues.Select(v => v.Handle).ToArray();
            using (var nativeInputNames = new NativeStringArray(inputNames))
            using (var nativeOutputNames = new NativeStringArray(outputNames))
            {
                NativeApiStatus.VerifySuccess(NativeMethods.Run(
                    Handle, runOptions == null ? IntPtr.Zero : runOptions.Handle, nativeInputNames.Pointers, inputs,
                    new UIntPtr((uint)inputs.Length), nativeOutputNames.Pointers, new UIntPtr((uint)outputs.Length),
                    outputs));
            }
            // Nothing native may be released while the run reads it.
            GC.KeepAlive(inputValues);
            GC.KeepAlive(runOptions);
            GC.KeepAlive(this);
        }

        // ---- Profiling and lifetime ----------------------------------------------

        /// <summary>Ends profiling and returns the profile's file name.</summary>
        public string EndProfiling()
        {
            IntPtr name;
            NativeApiStatus.VerifySuccess(
                NativeMethods.SessionEndProfiling(Handle, OnyxAllocator.DefaultInstance.Pointer, out name));
            return NativeStrings.TakeAllocated(name);
        }

        public ulong ProfilingStartTimeNs
        {
            get
            {
                ulong nanoseconds;
                NativeApiStatus.VerifySuccess(NativeMethods.SessionGetProfilingStartTimeNs(Handle, out nanoseconds));
                return nanoseconds;
            }
        }

        public void Dispose()
        {
            handle.Dispose();
            foreach (MemoryPin pin in initializerPins)
            {
                pin.Release();
            }
            initializerPins.Clear();
        }
    }
}

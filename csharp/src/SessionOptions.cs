// Session options (onnxruntime's SessionOptions): properties set the C
// options at once; getters return what was last set.
using System;
using System.Collections.Generic;

namespace Onyx
{
    public class SessionOptions : IDisposable
    {
        private readonly NativeHandle handle;
        // Pins of initializers added over managed memory: a session made with
        // these options shares them (InferenceSession keeps its own references).
        private readonly List<MemoryPin> pins = new List<MemoryPin>();

        private int intraOpNumThreads;
        private int interOpNumThreads;
        private GraphOptimizationLevel graphOptimizationLevel = GraphOptimizationLevel.ONYX_ENABLE_ALL;
        private ExecutionMode executionMode = ExecutionMode.ONYX_SEQUENTIAL;
        private string optimizedModelFilePath = "";
        private bool enableProfiling;
        private string profileOutputPathPrefix = "onyx_profile_";
        private bool enableMemoryPattern = true;
        private bool enableCpuMemArena = true;
        private string logId = "";
        private OnyxLoggingLevel logSeverityLevel = OnyxLoggingLevel.ONYX_LOGGING_LEVEL_WARNING;

        public SessionOptions()
        {
            IntPtr options;
            NativeApiStatus.VerifySuccess(NativeMethods.CreateSessionOptions(out options));
            handle = new NativeHandle(options, NativeMethods.ReleaseSessionOptions);
        }

        internal IntPtr Handle { get { return handle.Pointer; } }

        internal IEnumerable<MemoryPin> Pins { get { return pins; } }

        /// <summary>Threads of the session's intra-op pool; 0 (the default): one per physical core.</summary>
        public int IntraOpNumThreads
        {
            get { return intraOpNumThreads; }
            set
            {
                NativeApiStatus.VerifySuccess(NativeMethods.SetIntraOpNumThreads(Handle, value));
                intraOpNumThreads = value;
            }
        }

        public int InterOpNumThreads
        {
            get { return interOpNumThreads; }
            set
            {
                NativeApiStatus.VerifySuccess(NativeMethods.SetInterOpNumThreads(Handle, value));
                interOpNumThreads = value;
            }
        }

        public GraphOptimizationLevel GraphOptimizationLevel
        {
            get { return graphOptimizationLevel; }
            set
            {
                NativeApiStatus.VerifySuccess(NativeMethods.SetSessionGraphOptimizationLevel(Handle, value));
                graphOptimizationLevel = value;
            }
        }

        public ExecutionMode ExecutionMode
        {
            get { return executionMode; }
            set
            {
                NativeApiStatus.VerifySuccess(NativeMethods.SetSessionExecutionMode(Handle, value));
                executionMode = value;
            }
        }

        /// <summary>Where the optimized graph is saved as an ONNX model ("" for nowhere).</summary>
        public string OptimizedModelFilePath
        {
            get { return optimizedModelFilePath; }
            set
            {
                NativeApiStatus.VerifySuccess(NativeMethods.SetOptimizedModelFilePath(Handle, NativeStrings.ToUtf8(value)));
                optimizedModelFilePath = value;
            }
        }

        public bool EnableProfiling
        {
            get { return enableProfiling; }
            set
            {
                NativeApiStatus.VerifySuccess(value ? NativeMethods.EnableProfiling(Handle, NativeStrings.ToUtf8(profileOutputPathPrefix))
                                                    : NativeMethods.DisableProfiling(Handle));
                enableProfiling = value;
            }
        }

        /// <summary>The profile file's prefix; set it before EnableProfiling.</summary>
        public string ProfileOutputPathPrefix
        {
            get { return profileOutputPathPrefix; }
            set
            {
                profileOutputPathPrefix = value;
                if (enableProfiling)
                {
                    EnableProfiling = true;
                }
            }
        }

        public bool EnableMemoryPattern
        {
            get { return enableMemoryPattern; }
            set
            {
                NativeApiStatus.VerifySuccess(value ? NativeMethods.EnableMemPattern(Handle) : NativeMethods.DisableMemPattern(Handle));
                enableMemoryPattern = value;
            }
        }

        public bool EnableCpuMemArena
        {
            get { return enableCpuMemArena; }
            set
            {
                NativeApiStatus.VerifySuccess(value ? NativeMethods.EnableCpuMemArena(Handle) : NativeMethods.DisableCpuMemArena(Handle));
                enableCpuMemArena = value;
            }
        }

        public string LogId
        {
            get { return logId; }
            set
            {
                NativeApiStatus.VerifySuccess(NativeMethods.SetSessionLogId(Handle, NativeStrings.ToUtf8(value)));
                logId = value;
            }
        }

        public OnyxLoggingLevel LogSeverityLevel
        {
            get { return logSeverityLevel; }
            set
            {
                NativeApiStatus.VerifySuccess(NativeMethods.SetSessionLogSeverityLevel(Handle, (int)value));
                logSeverityLevel = value;
            }
        }

        /// <summary>A session configuration entry ("session.intra_op.allow_spinning", ...).</summary>
        public void AddSessionConfigEntry(string key, string value)
        {
            NativeApiStatus.VerifySuccess(NativeMethods.AddSessionConfigEntry(Handle, NativeStrings.ToUtf8(key),
                                                                              NativeStrings.ToUtf8(value)));
        }

        /// <summary>Fixes the inputs' dimensions with that denotation ("DATA_BATCH", ...).</summary>
        public void AddFreeDimensionOverride(string dimDenotation, long dimValue)
        {
            NativeApiStatus.VerifySuccess(NativeMethods.AddFreeDimensionOverride(Handle, NativeStrings.ToUtf8(dimDenotation), dimValue));
        }

        /// <summary>Fixes the inputs' dimensions with that symbol ("batch", ...).</summary>
        public void AddFreeDimensionOverrideByName(string dimName, long dimValue)
        {
            NativeApiStatus.VerifySuccess(NativeMethods.AddFreeDimensionOverrideByName(Handle, NativeStrings.ToUtf8(dimName), dimValue));
        }

        /// <summary>Puts `value` in place of the model's initializer `name`. The
        /// sessions share its memory; managed memory stays pinned while these
        /// options or a session made with them live.</summary>
        public void AddInitializer(string name, OnyxValue value)
        {
            NativeApiStatus.VerifySuccess(NativeMethods.AddInitializer(Handle, NativeStrings.ToUtf8(name), value.Handle));
            foreach (MemoryPin pin in value.Pins)
            {
                pins.Add(pin.AddReference());
            }
        }

        /// <summary>Appends an execution provider by name ("OpenVINOExecutionProvider",
        /// ...) with its options; the CPU provider is always the last fallback.</summary>
        public void AppendExecutionProvider(string providerName, Dictionary<string, string> providerOptions = null)
        {
            var keys = new List<string>();
            var values = new List<string>();
            if (providerOptions != null)
            {
                foreach (KeyValuePair<string, string> entry in providerOptions)
                {
                    keys.Add(entry.Key);
                    values.Add(entry.Value);
                }
            }
            using (var nativeKeys = new NativeStringArray(keys))
            using (var nativeValues = new NativeStringArray(values))
            {
                NativeApiStatus.VerifySuccess(NativeMethods.SessionOptionsAppendExecutionProvider(
                    Handle, NativeStrings.ToUtf8(providerName), nativeKeys.Pointers, nativeValues.Pointers,
                    new UIntPtr((uint)keys.Count)));
            }
        }

        /// <summary>Loads a custom operator library (a shared library exporting
        /// RegisterCustomOps) and registers its operators; the library stays
        /// loaded for the rest of the process.</summary>
        public void RegisterCustomOpLibrary(string libraryPath)
        {
            NativeApiStatus.VerifySuccess(NativeMethods.RegisterCustomOpsLibrary_V2(Handle, NativeStrings.ToUtf8(libraryPath)));
        }

        /// <summary>onnxruntime's older name for RegisterCustomOpLibrary. onyx
        /// keeps the library loaded itself, so libraryHandle is IntPtr.Zero and
        /// there is nothing for the caller to unload.</summary>
        public void RegisterCustomOpLibraryV2(string libraryPath, out IntPtr libraryHandle)
        {
            RegisterCustomOpLibrary(libraryPath);
            libraryHandle = IntPtr.Zero;
        }

        public void Dispose()
        {
            handle.Dispose();
            foreach (MemoryPin pin in pins)
            {
                pin.Release();
            }
            pins.Clear();
        }
    }
}

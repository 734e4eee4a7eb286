// The process's environment (onnxruntime's OrtEnv): one per process, made on
// first use, passed to every session.
using System;
using System.Collections.Generic;
using System.Runtime.InteropServices;

namespace Onyx
{
    public sealed class OnyxEnv
    {
        private static readonly object creationLock = new object();
        private static OnyxEnv instance;
        private readonly NativeHandle handle;

        private OnyxEnv(OnyxLoggingLevel level)
        {
            IntPtr env;
            NativeApiStatus.VerifySuccess(NativeMethods.CreateEnv(level, NativeStrings.ToUtf8("onyx-csharp"), out env));
            // Never released: sessions may outlive any owner the process has.
            handle = new NativeHandle(env, null);
            EnvLogLevel = level;
        }

        /// <summary>The environment, made with warning-level logging on first call.</summary>
        public static OnyxEnv Instance()
        {
            lock (creationLock)
            {
                if (instance == null)
                {
                    instance = new OnyxEnv(OnyxLoggingLevel.ONYX_LOGGING_LEVEL_WARNING);
                }
                return instance;
            }
        }

        public OnyxLoggingLevel EnvLogLevel { get; private set; }

        internal IntPtr Pointer { get { return handle.Pointer; } }

        /// <summary>The execution providers this build can create, e.g. "CPUExecutionProvider".</summary>
        public string[] GetAvailableProviders()
        {
            IntPtr names;
            int count;
            NativeApiStatus.VerifySuccess(NativeMethods.GetAvailableProviders(out names, out count));
            return TakeProviderNames(names, count, NativeMethods.ReleaseAvailableProviders);
        }

        /// <summary>libonyx's version, "0.1.0".</summary>
        public string GetVersionString()
        {
            return NativeMethods.VersionString;
        }

        public string GetBuildInfoString()
        {
            return NativeStrings.FromUtf8(NativeMethods.GetBuildInfoString());
        }

        internal static string[] TakeProviderNames(IntPtr names, int count, NativeMethods.DReleaseAvailableProviders release)
        {
            var result = new string[count];
            try
            {
                for (int i = 0; i < count; ++i)
                {
                    result[i] = NativeStrings.FromUtf8(Marshal.ReadIntPtr(names, i * IntPtr.Size));
                }
            }
            finally
            {
                NativeApiStatus.VerifySuccess(release(names, count));
            }
            return result;
        }
    }
}

// Options of one run (onnxruntime's RunOptions); Terminate may be set from
// another thread to stop a run in flight.
using System;

namespace Onyx
{
    public class RunOptions : IDisposable
    {
        private readonly NativeHandle handle;
        private bool terminate;

        public RunOptions()
        {
            IntPtr options;
            NativeApiStatus.VerifySuccess(NativeMethods.CreateRunOptions(out options));
            handle = new NativeHandle(options, NativeMethods.ReleaseRunOptions);
        }

        internal IntPtr Handle { get { return handle.Pointer; } }

        public OnyxLoggingLevel LogSeverityLevel
        {
            get
            {
                int level;
                NativeApiStatus.VerifySuccess(NativeMethods.RunOptionsGetRunLogSeverityLevel(Handle, out level));
                return (OnyxLoggingLevel)level;
            }
            set { NativeApiStatus.VerifySuccess(NativeMethods.RunOptionsSetRunLogSeverityLevel(Handle, (int)value)); }
        }

        /// <summary>The run's tag in logs and profiles.</summary>
        public string LogId
        {
            get
            {
                IntPtr tag;
                NativeApiStatus.VerifySuccess(NativeMethods.RunOptionsGetRunTag(Handle, out tag));
                return NativeStrings.FromUtf8(tag);
            }
            set { NativeApiStatus.VerifySuccess(NativeMethods.RunOptionsSetRunTag(Handle, NativeStrings.ToUtf8(value))); }
        }

        /// <summary>While true, runs with these options stop between nodes with an error.</summary>
        public bool Terminate
        {
            get { return terminate; }
            set
            {
                NativeApiStatus.VerifySuccess(value ? NativeMethods.RunOptionsSetTerminate(Handle)
                                                    : NativeMethods.RunOptionsUnsetTerminate(Handle));
                terminate = value;
            }
        }

        public void AddRunConfigEntry(string key, string value)
        {
            NativeApiStatus.VerifySuccess(NativeMethods.AddRunConfigEntry(Handle, NativeStrings.ToUtf8(key),
                                                                          NativeStrings.ToUtf8(value)));
        }

        public void Dispose()
        {
            handle.Dispose();
        }
    }
}

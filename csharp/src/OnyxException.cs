// Errors from the C API: every status that is not NULL becomes an
// OnyxException carrying its code and message, and the status is released.
using System;

namespace Onyx
{
    /// <summary>An error onyx reported (onnxruntime's OnnxRuntimeException).
    /// Message is "[ErrorCode:Code] message", as onnxruntime's.</summary>
    public class OnyxException : Exception
    {
        public OnyxException(ErrorCode errorCode, string message)
            : base("[ErrorCode:" + errorCode + "] " + message)
        {
            ErrorCode = errorCode;
            StatusMessage = message;
        }

        /// <summary>The status's code.</summary>
        public ErrorCode ErrorCode { get; private set; }

        /// <summary>The status's message as onyx wrote it, without the code.</summary>
        public string StatusMessage { get; private set; }
    }

    internal static class NativeApiStatus
    {
        /// <summary>Throws the status's error (releasing the status) unless it is NULL.</summary>
        internal static void VerifySuccess(IntPtr status)
        {
            if (status == IntPtr.Zero)
            {
                return;
            }
            ErrorCode code = NativeMethods.GetErrorCode(status);
            string message = NativeStrings.FromUtf8(NativeMethods.GetErrorMessage(status));
            NativeMethods.ReleaseStatus(status);
            throw new OnyxException(code, message);
        }
    }
}

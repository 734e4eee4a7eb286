// Every native object this binding owns sits in a NativeHandle: released
// exactly once, by Dispose or, if the owner forgot, by the finalizer that
// SafeHandle brings.
using System;
using System.Runtime.InteropServices;

namespace Onyx
{
    internal sealed class NativeHandle : SafeHandle
    {
        private readonly NativeMethods.DRelease release;

        /// <summary>Owns `pointer` and frees it with `release`; with release null
        /// the pointer is borrowed (owned by another object) and never freed.</summary>
        internal NativeHandle(IntPtr pointer, NativeMethods.DRelease release)
            : base(IntPtr.Zero, release != null)
        {
            this.release = release;
            SetHandle(pointer);
        }

        public override bool IsInvalid { get { return handle == IntPtr.Zero; } }

        /// <summary>The pointer for a native call; throws once disposed.</summary>
        internal IntPtr Pointer
        {
            get
            {
                if (IsClosed)
                {
                    throw new ObjectDisposedException("an onyx object used after Dispose");
                }
                return handle;
            }
        }

        protected override bool ReleaseHandle()
        {
            release(handle);
            return true;
        }
    }
}

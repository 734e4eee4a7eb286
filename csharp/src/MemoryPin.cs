// Managed memory that native values point into: pinned while any value (an
// input, or an output onyx made as a view of that input) uses it.
using System;
using System.Buffers;
using System.Threading;

namespace Onyx
{
    internal sealed class MemoryPin
    {
        private MemoryHandle handle;
        private readonly IntPtr start;
        private readonly long byteCount;
        private int references = 1;

        internal unsafe MemoryPin(MemoryHandle handle, long byteCount)
        {
            this.handle = handle;
            start = new IntPtr(handle.Pointer);
            this.byteCount = byteCount;
        }

        // Reached only when every value that held it is unreachable too (they
        // hold it strongly), so no native value can still be read through it.
        ~MemoryPin()
        {
            handle.Dispose();
        }

        internal IntPtr Start { get { return start; } }

        internal bool Contains(IntPtr p)
        {
            long offset = p.ToInt64() - start.ToInt64();
            return offset >= 0 && offset < Math.Max(byteCount, 1);
        }

        internal MemoryPin AddReference()
        {
            Interlocked.Increment(ref references);
            return this;
        }

        internal void Release()
        {
            if (Interlocked.Decrement(ref references) == 0)
            {
                handle.Dispose();
                GC.SuppressFinalize(this);
            }
        }
    }
}

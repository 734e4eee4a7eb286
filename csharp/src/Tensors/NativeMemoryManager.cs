// Memory<T> over a native tensor's elements, so that a run's outputs are
// DenseTensors without a copy (valid while the value that owns them lives).
using System;
using System.Buffers;

namespace Onyx.Tensors
{
    internal sealed unsafe class NativeMemoryManager<T> : MemoryManager<T>
    {
        private readonly IntPtr data;
        private readonly int length;
        private readonly int elementSize;

        internal NativeMemoryManager(IntPtr data, int length, int elementSize)
        {
            this.data = data;
            this.length = length;
            this.elementSize = elementSize;
        }

        public override Span<T> GetSpan()
        {
            return new Span<T>(data.ToPointer(), length);
        }

        // Native memory does not move: pinning is a pointer.
        public override MemoryHandle Pin(int elementIndex = 0)
        {
            if (elementIndex < 0 || elementIndex > length)
            {
                throw new ArgumentOutOfRangeException("elementIndex");
            }
            return new MemoryHandle((byte*)data.ToPointer() + (long)elementIndex * elementSize);
        }

        public override void Unpin()
        {
        }

        protected override void Dispose(bool disposing)
        {
        }
    }
}

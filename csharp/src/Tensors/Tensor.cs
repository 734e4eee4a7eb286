// A small stand-in for System.Numerics.Tensors (which onnxruntime's C# API
// ships a copy of as Microsoft.ML.OnnxRuntime.Tensors): dense, row-major
// tensors over Memory<T>, with the members inputs and outputs need.
using System;
using System.Collections;
using System.Collections.Generic;
using System.Text;

namespace Onyx.Tensors
{
    /// <summary>Makes a value an input can be fed from (NamedOnnxValue).</summary>
    internal interface IOnyxValueSource
    {
        OnyxValue ToOnyxValue();
    }

    public abstract class Tensor<T> : IEnumerable<T>, IOnyxValueSource
    {
        private readonly int[] dimensions;
        private readonly int[] strides;
        private readonly long length;

        protected Tensor(ReadOnlySpan<int> dimensions)
        {
            this.dimensions = dimensions.ToArray();
            strides = new int[this.dimensions.Length];
            long size = 1;
            for (int i = this.dimensions.Length - 1; i >= 0; --i)
            {
                if (this.dimensions[i] < 0)
                {
                    throw new ArgumentOutOfRangeException("dimensions", "dimension " + i + " is negative");
                }
                strides[i] = (int)size;
                size *= this.dimensions[i];
            }
            length = size;
        }

        public ReadOnlySpan<int> Dimensions { get { return dimensions; } }
        public ReadOnlySpan<int> Strides { get { return strides; } }
        public int Rank { get { return dimensions.Length; } }
        public long Length { get { return length; } }

        /// <summary>Element `index` in row-major order.</summary>
        public abstract T GetValue(int index);
        public abstract void SetValue(int index, T value);

        public T this[params int[] indices]
        {
            get { return GetValue(Offset(indices)); }
            set { SetValue(Offset(indices), value); }
        }

        public T[] ToArray()
        {
            var result = new T[length];
            for (int i = 0; i < result.Length; ++i)
            {
                result[i] = GetValue(i);
            }
            return result;
        }

        public IEnumerator<T> GetEnumerator()
        {
            for (int i = 0; i < length; ++i)
            {
                yield return GetValue(i);
            }
        }

        IEnumerator IEnumerable.GetEnumerator()
        {
            return GetEnumerator();
        }

        public override string ToString()
        {
            var text = new StringBuilder("Tensor<" + typeof(T).Name + ">[");
            text.Append(string.Join(",", dimensions));
            return text.Append("]").ToString();
        }

        internal static long[] LongDimensions(ReadOnlySpan<int> dimensions)
        {
            var result = new long[dimensions.Length];
            for (int i = 0; i < result.Length; ++i)
            {
                result[i] = dimensions[i];
            }
            return result;
        }

        private int Offset(int[] indices)
        {
            if (indices.Length != dimensions.Length)
            {
                throw new ArgumentException(indices.Length + " indices for a tensor of rank " + dimensions.Length);
            }
            int offset = 0;
            for (int i = 0; i < indices.Length; ++i)
            {
                if (indices[i] < 0 || indices[i] >= dimensions[i])
                {
                    throw new IndexOutOfRangeException("index " + indices[i] + " of dimension " + i + " (size " +
                                                       dimensions[i] + ")");
                }
                offset += indices[i] * strides[i];
            }
            return offset;
        }

        // Numeric tensors are fed in place when dense (DenseTensor overrides
        // this), copied otherwise; strings are always copied into onyx.
        OnyxValue IOnyxValueSource.ToOnyxValue()
        {
            return ToOnyxValue();
        }

        internal virtual OnyxValue ToOnyxValue()
        {
            if (typeof(T) == typeof(string))
            {
                return OnyxValue.CreateFromStringTensor((Tensor<string>)(object)this);
            }
            return ValueOver(new Memory<T>(ToArray()));
        }

        internal OnyxValue ValueOver(Memory<T> memory)
        {
            return OnyxValue.CreateTensorOver(OnyxMemoryInfo.DefaultInstance, memory, LongDimensions(Dimensions));
        }
    }

    /// <summary>A tensor whose elements are one Memory&lt;T&gt; in row-major order.</summary>
    public class DenseTensor<T> : Tensor<T>
    {
        private readonly Memory<T> memory;

        /// <summary>A zeroed 1-D tensor of `length` elements.</summary>
        public DenseTensor(int length) : this(new Memory<T>(new T[length]), new[] { length })
        {
        }

        /// <summary>A zeroed tensor of those dimensions.</summary>
        public DenseTensor(ReadOnlySpan<int> dimensions) : base(dimensions)
        {
            memory = new Memory<T>(new T[Length]);
        }

        /// <summary>A tensor over `memory` (not copied) with those dimensions.</summary>
        public DenseTensor(Memory<T> memory, ReadOnlySpan<int> dimensions) : base(dimensions)
        {
            if (memory.Length < Length)
            {
                throw new ArgumentException("the memory holds " + memory.Length + " elements; the dimensions need " +
                                            Length);
            }
            this.memory = memory;
        }

        /// <summary>The elements, in place.</summary>
        public Memory<T> Buffer { get { return memory; } }

        public override T GetValue(int index)
        {
            return memory.Span[index];
        }

        public override void SetValue(int index, T value)
        {
            Span<T> span = memory.Span;
            span[index] = value;
        }

        internal override OnyxValue ToOnyxValue()
        {
            if (typeof(T) == typeof(string))
            {
                return base.ToOnyxValue();
            }
            return ValueOver(memory.Slice(0, (int)Length));
        }
    }
}

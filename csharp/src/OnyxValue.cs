// Values (onnxruntime's OrtValue): tensors over managed memory without a
// copy, tensors onyx allocates, string tensors, sequences and maps, and what
// a run returns.
using System;
using System.Buffers;
using System.Collections.Generic;
using System.Runtime.InteropServices;

namespace Onyx
{
    /// <summary>A tensor's element type and shape (onnxruntime's
    /// OrtTensorTypeAndShapeInfo): a snapshot, not tied to the value.</summary>
    public sealed class OnyxTensorTypeAndShapeInfo
    {
        internal OnyxTensorTypeAndShapeInfo(TensorElementType elementType, long[] shape, string[] symbolicShape,
                                            long elementCount)
        {
            ElementDataType = elementType;
            Shape = shape;
            SymbolicShape = symbolicShape;
            ElementCount = elementCount;
        }

        public TensorElementType ElementDataType { get; private set; }
        public bool IsString { get { return ElementDataType == TensorElementType.String; } }
        /// <summary>The dimensions; -1 where a dimension is unknown (metadata).</summary>
        public long[] Shape { get; private set; }
        /// <summary>The dimensions' symbols ("" where none).</summary>
        public string[] SymbolicShape { get; private set; }
        public int DimensionsCount { get { return Shape.Length; } }
        /// <summary>The product of the dimensions; -1 when one is unknown.</summary>
        public long ElementCount { get; private set; }

        /// <summary>Reads a native OnyxTensorTypeAndShapeInfo (not released here).</summary>
        internal static OnyxTensorTypeAndShapeInfo Read(IntPtr info)
        {
            TensorElementType type;
            NativeApiStatus.VerifySuccess(NativeMethods.GetTensorElementType(info, out type));
            UIntPtr rank;
            NativeApiStatus.VerifySuccess(NativeMethods.GetDimensionsCount(info, out rank));
            var shape = new long[(int)rank];
            var symbols = new IntPtr[(int)rank];
            NativeApiStatus.VerifySuccess(NativeMethods.GetDimensions(info, shape, rank));
            NativeApiStatus.VerifySuccess(NativeMethods.GetSymbolicDimensions(info, symbols, rank));
            var symbolic = new string[symbols.Length];
            for (int i = 0; i < symbols.Length; ++i)
            {
                symbolic[i] = NativeStrings.FromUtf8(symbols[i]) ?? "";
            }
            UIntPtr count;
            NativeApiStatus.VerifySuccess(NativeMethods.GetTensorShapeElementCount(info, out count));
            // size_t(-1) for "unknown" reads back as -1.
            long elementCount = unchecked((long)count.ToUInt64());
            return new OnyxTensorTypeAndShapeInfo(type, shape, symbolic, elementCount);
        }
    }

    public class OnyxValue : IDisposable
    {
        private readonly NativeHandle handle;
        // The managed memory this value (or a value it is a view of) points into.
        private readonly List<MemoryPin> pins = new List<MemoryPin>();

        internal OnyxValue(IntPtr value)
        {
            handle = new NativeHandle(value, NativeMethods.ReleaseValue);
        }

        internal IntPtr Handle { get { return handle.Pointer; } }

        internal IEnumerable<MemoryPin> Pins { get { return pins; } }

        /// <summary>Makes this value keep `pin` pinned until it is disposed.</summary>
        internal void SharePin(MemoryPin pin)
        {
            if (!pins.Contains(pin))
            {
                pins.Add(pin.AddReference());
            }
        }

        // ---- Creation ----------------------------------------------------------

        /// <summary>A tensor over `data` in place, no copy: the array stays pinned
        /// until the value (and every output a run made as a view of it) is
        /// disposed. Writes to the array are seen by the value and back.</summary>
        public static OnyxValue CreateTensorValueFromMemory<T>(T[] data, long[] shape) where T : struct
        {
            return CreateTensorValueFromMemory(OnyxMemoryInfo.DefaultInstance, new Memory<T>(data), shape);
        }

        /// <summary>A tensor over `memory` in place, no copy (pinned as above).
        /// `memoryInfo` describes where it is: host memory for managed arrays.</summary>
        public static OnyxValue CreateTensorValueFromMemory<T>(OnyxMemoryInfo memoryInfo, Memory<T> memory,
                                                               long[] shape) where T : struct
        {
            return CreateTensorOver(memoryInfo, memory, shape);
        }

        // Without the struct constraint, for Tensor<T> whose T is checked at run
        // time (ElementTypes.Of refuses what onyx has no element type for).
        internal static OnyxValue CreateTensorOver<T>(OnyxMemoryInfo memoryInfo, Memory<T> memory, long[] shape)
        {
            TensorElementType type = ElementTypes.Of<T>();
            int size = ElementTypes.Size(type);
            if (size == 0)
            {
                throw new OnyxException(ErrorCode.InvalidArgument, "a tensor of " + type +
                                                                       " cannot be made over managed memory: " +
                                                                       "use CreateFromStringTensor for strings");
            }
            if (shape == null)
            {
                throw new ArgumentNullException("shape");
            }
            long byteCount = (long)memory.Length * size;
            var pin = new MemoryPin(memory.Pin(), byteCount);
            try
            {
                IntPtr value;
                NativeApiStatus.VerifySuccess(NativeMethods.CreateTensorWithDataAsOnyxValue(
                    memoryInfo.Pointer, pin.Start, new UIntPtr((ulong)byteCount), shape, new UIntPtr((uint)shape.Length),
                    type, out value));
                var result = new OnyxValue(value);
                result.SharePin(pin);
                return result;
            }
            finally
            {
                pin.Release(); // the value holds its own reference
            }
        }

        /// <summary>A tensor over native memory the caller owns and keeps alive.</summary>
        public static OnyxValue CreateTensorValueWithData(OnyxMemoryInfo memoryInfo, TensorElementType elementType,
                                                          long[] shape, IntPtr dataBuffer, long bufferLengthInBytes)
        {
            IntPtr value;
            NativeApiStatus.VerifySuccess(NativeMethods.CreateTensorWithDataAsOnyxValue(
                memoryInfo.Pointer, dataBuffer, new UIntPtr((ulong)bufferLengthInBytes), shape,
                new UIntPtr((uint)shape.Length), elementType, out value));
            return new OnyxValue(value);
        }

        /// <summary>A zeroed tensor in `allocator`'s memory (strings empty).</summary>
        public static OnyxValue CreateAllocatedTensorValue(OnyxAllocator allocator, TensorElementType elementType,
                                                           long[] shape)
        {
            IntPtr value;
            NativeApiStatus.VerifySuccess(NativeMethods.CreateTensorAsOnyxValue(
                allocator.Pointer, shape, new UIntPtr((uint)shape.Length), elementType, out value));
            return new OnyxValue(value);
        }

        /// <summary>A string tensor of empty strings, filled with StringTensorSetElementAt.</summary>
        public static OnyxValue CreateTensorWithEmptyStrings(OnyxAllocator allocator, long[] shape)
        {
            return CreateAllocatedTensorValue(allocator, TensorElementType.String, shape);
        }

        /// <summary>A string tensor with the tensor's strings (copied: onyx keeps its own).</summary>
        public static OnyxValue CreateFromStringTensor(Tensors.Tensor<string> tensor)
        {
            long[] shape = Tensors.Tensor<string>.LongDimensions(tensor.Dimensions);
            OnyxValue value = CreateTensorWithEmptyStrings(OnyxAllocator.DefaultInstance, shape);
            try
            {
                for (int i = 0; i < tensor.Length; ++i)
                {
                    value.StringTensorSetElementAt(tensor.GetValue(i), i);
                }
            }
            catch
            {
                value.Dispose();
                throw;
            }
            return value;
        }

        /// <summary>A sequence of the tensors (ONNX_TYPE_SEQUENCE). It shares their
        /// memory; they stay the caller's to dispose.</summary>
        public static OnyxValue CreateSequence(IReadOnlyCollection<OnyxValue> values)
        {
            return CreateComposite(values, OnnxValueType.ONNX_TYPE_SEQUENCE);
        }

        /// <summary>A map from a 1-D keys tensor and a 1-D values tensor
        /// (ONNX_TYPE_MAP). Shares their memory; they stay the caller's.</summary>
        public static OnyxValue CreateMap(OnyxValue keys, OnyxValue values)
        {
            return CreateComposite(new[] { keys, values }, OnnxValueType.ONNX_TYPE_MAP);
        }

        private static OnyxValue CreateComposite(IReadOnlyCollection<OnyxValue> values, OnnxValueType type)
        {
            var handles = new IntPtr[values.Count];
            int i = 0;
            foreach (OnyxValue v in values)
            {
                handles[i++] = v.Handle;
            }
            IntPtr composite;
            NativeApiStatus.VerifySuccess(
                NativeMethods.CreateValue(handles, new UIntPtr((uint)handles.Length), type, out composite));
            var result = new OnyxValue(composite);
            foreach (OnyxValue v in values)
            {
                foreach (MemoryPin pin in v.pins)
                {
                    result.SharePin(pin);
                }
            }
            GC.KeepAlive(values);
            return result;
        }

        // ---- What it is --------------------------------------------------------

        public OnnxValueType OnnxType
        {
            get
            {
                OnnxValueType type;
                NativeApiStatus.VerifySuccess(NativeMethods.GetValueType(Handle, out type));
                return type;
            }
        }

        public bool IsTensor
        {
            get
            {
                int result;
                NativeApiStatus.VerifySuccess(NativeMethods.IsTensor(Handle, out result));
                return result != 0;
            }
        }

        /// <summary>False for an empty optional.</summary>
        public bool HasValue
        {
            get
            {
                int result;
                NativeApiStatus.VerifySuccess(NativeMethods.HasValue(Handle, out result));
                return result != 0;
            }
        }

        public OnyxTensorTypeAndShapeInfo GetTensorTypeAndShape()
        {
            IntPtr info;
            NativeApiStatus.VerifySuccess(NativeMethods.GetTensorTypeAndShape(Handle, out info));
            try
            {
                return OnyxTensorTypeAndShapeInfo.Read(info);
            }
            finally
            {
                NativeMethods.ReleaseTensorTypeAndShapeInfo(info);
            }
        }

        // ---- Tensor data -------------------------------------------------------

        /// <summary>The tensor's elements in place (host memory), valid while the
        /// value lives. T must be the tensor's element type.</summary>
        public ReadOnlySpan<T> GetTensorDataAsSpan<T>() where T : struct
        {
            return GetTensorMutableDataAsSpan<T>();
        }

        public unsafe Span<T> GetTensorMutableDataAsSpan<T>() where T : struct
        {
            OnyxTensorTypeAndShapeInfo info = GetTensorTypeAndShape();
            TensorElementType wanted = ElementTypes.Of<T>();
            if (info.ElementDataType != wanted || wanted == TensorElementType.String)
            {
                throw new OnyxException(ErrorCode.InvalidArgument, "the tensor's elements are " + info.ElementDataType +
                                                                       ", not " + typeof(T).Name +
                                                                       (info.IsString ? " (use GetStringElement)" : ""));
            }
            return new Span<T>(DataPointer().ToPointer(), CheckedCount(info.ElementCount));
        }

        /// <summary>The tensor's bytes in place.</summary>
        public unsafe Span<byte> GetTensorMutableRawData()
        {
            OnyxTensorTypeAndShapeInfo info = GetTensorTypeAndShape();
            int size = ElementTypes.Size(info.ElementDataType);
            if (size == 0)
            {
                throw new OnyxException(ErrorCode.InvalidArgument,
                                        "a tensor of " + info.ElementDataType + " has no raw bytes to view");
            }
            return new Span<byte>(DataPointer().ToPointer(), CheckedCount(info.ElementCount * size));
        }

        internal IntPtr DataPointer()
        {
            IntPtr data;
            NativeApiStatus.VerifySuccess(NativeMethods.GetTensorMutableData(Handle, out data));
            return data;
        }

        private static int CheckedCount(long count)
        {
            if (count > int.MaxValue)
            {
                throw new OnyxException(ErrorCode.InvalidArgument,
                                        count + " elements do not fit a Span: read the tensor through a native pointer");
            }
            return (int)count;
        }

        // ---- Strings -----------------------------------------------------------

        public string GetStringElement(int index)
        {
            UIntPtr length;
            NativeApiStatus.VerifySuccess(
                NativeMethods.GetStringTensorElementLength(Handle, new UIntPtr((uint)index), out length));
            var bytes = new byte[(int)length];
            NativeApiStatus.VerifySuccess(
                NativeMethods.GetStringTensorElement(Handle, length, new UIntPtr((uint)index), bytes));
            return System.Text.Encoding.UTF8.GetString(bytes);
        }

        public string[] GetStringTensorAsArray()
        {
            OnyxTensorTypeAndShapeInfo info = GetTensorTypeAndShape();
            if (!info.IsString)
            {
                throw new OnyxException(ErrorCode.InvalidArgument,
                                        "the tensor's elements are " + info.ElementDataType + ", not strings");
            }
            var result = new string[CheckedCount(info.ElementCount)];
            for (int i = 0; i < result.Length; ++i)
            {
                result[i] = GetStringElement(i);
            }
            return result;
        }

        public void StringTensorSetElementAt(string s, int index)
        {
            NativeApiStatus.VerifySuccess(NativeMethods.FillStringTensorElement(
                Handle, NativeStrings.ToUtf8(s ?? ""), new UIntPtr((uint)index)));
        }

        // ---- Sequences and maps ------------------------------------------------

        /// <summary>A sequence's element count; 2 for a map (keys, values).</summary>
        public int GetValueCount()
        {
            UIntPtr count;
            NativeApiStatus.VerifySuccess(NativeMethods.GetValueCount(Handle, out count));
            return (int)count;
        }

        /// <summary>Element `index` of a sequence, or a map's keys (0) or values
        /// (1): a new value, sharing this one's memory, for the caller to dispose.</summary>
        public OnyxValue GetValue(int index, OnyxAllocator allocator)
        {
            IntPtr element;
            NativeApiStatus.VerifySuccess(NativeMethods.GetValue(Handle, index, allocator.Pointer, out element));
            var result = new OnyxValue(element);
            foreach (MemoryPin pin in pins)
            {
                result.SharePin(pin);
            }
            return result;
        }

        // ---- Lifetime ----------------------------------------------------------

        public void Dispose()
        {
            Dispose(true);
            GC.SuppressFinalize(this);
        }

        protected virtual void Dispose(bool disposing)
        {
            if (!disposing)
            {
                return; // the handle and the pins finalize themselves
            }
            handle.Dispose();
            foreach (MemoryPin pin in pins)
            {
                pin.Release();
            }
            pins.Clear();
        }
    }
}

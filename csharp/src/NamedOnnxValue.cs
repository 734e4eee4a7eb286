// Named inputs and outputs as onnxruntime's C# API has them: NamedOnnxValue
// (a name and a Tensor<T>) for inputs, DisposableNamedOnnxValue for what a
// run returns (tensors over onyx's memory, sequences as lists, maps as
// dictionaries).
using System;
using System.Collections;
using System.Collections.Generic;
using Onyx.Tensors;

namespace Onyx
{
    public class NamedOnnxValue
    {
        protected NamedOnnxValue(string name, object value, OnnxValueType valueType)
        {
            Name = name;
            Value = value;
            ValueType = valueType;
        }

        /// <summary>An input fed from `value`: a DenseTensor's memory is fed in
        /// place, without a copy.</summary>
        public static NamedOnnxValue CreateFromTensor<T>(string name, Tensor<T> value)
        {
            return new NamedOnnxValue(name, value, OnnxValueType.ONNX_TYPE_TENSOR);
        }

        public string Name { get; set; }
        public object Value { get; set; }
        public OnnxValueType ValueType { get; private set; }

        /// <summary>The value as a tensor of T (null when it is not one).</summary>
        public Tensor<T> AsTensor<T>()
        {
            return Value as Tensor<T>;
        }

        /// <summary>A sequence's elements.</summary>
        public IEnumerable<T> AsEnumerable<T>()
        {
            return Value as IEnumerable<T>;
        }

        /// <summary>A map's entries.</summary>
        public IDictionary<K, V> AsDictionary<K, V>()
        {
            return Value as IDictionary<K, V>;
        }

        /// <summary>The OnyxValue an input is fed as; the caller disposes it.</summary>
        internal OnyxValue ToOnyxValue()
        {
            var source = Value as IOnyxValueSource;
            if (source == null)
            {
                throw new OnyxException(ErrorCode.InvalidArgument,
                                        "input '" + Name + "' holds " +
                                            (Value == null ? "null" : "a " + Value.GetType().Name) +
                                            ": a NamedOnnxValue input holds a Tensor<T> " +
                                            "(sequences and maps go through OnyxValue)");
            }
            return source.ToOnyxValue();
        }
    }

    /// <summary>A run's output. Tensors are DenseTensors over onyx's memory,
    /// valid until Dispose.</summary>
    public class DisposableNamedOnnxValue : NamedOnnxValue, IDisposable
    {
        private OnyxValue owned;
        private readonly List<DisposableNamedOnnxValue> children;

        private DisposableNamedOnnxValue(string name, object value, OnnxValueType type, OnyxValue owned,
                                         List<DisposableNamedOnnxValue> children)
            : base(name, value, type)
        {
            this.owned = owned;
            this.children = children;
        }

        /// <summary>Wraps `value`, which it then owns.</summary>
        internal static DisposableNamedOnnxValue CreateFromOnyxValue(string name, OnyxValue value)
        {
            try
            {
                OnnxValueType type = value.OnnxType;
                switch (type)
                {
                    case OnnxValueType.ONNX_TYPE_TENSOR:
                        return new DisposableNamedOnnxValue(name, TensorOf(value), type, value, null);
                    case OnnxValueType.ONNX_TYPE_SEQUENCE:
                        {
                            var elements = new List<DisposableNamedOnnxValue>();
                            int count = value.GetValueCount();
                            for (int i = 0; i < count; ++i)
                            {
                                elements.Add(CreateFromOnyxValue(name, value.GetValue(i, OnyxAllocator.DefaultInstance)));
                            }
                            return new DisposableNamedOnnxValue(name, elements, type, value, elements);
                        }
                    case OnnxValueType.ONNX_TYPE_MAP:
                        return new DisposableNamedOnnxValue(name, DictionaryOf(value), type, value, null);
                    default:
                        throw new OnyxException(ErrorCode.NotImplemented,
                                                "output '" + name + "' is a " + type +
                                                    ": use the Run overload that returns OnyxValues");
                }
            }
            catch
            {
                value.Dispose();
                throw;
            }
        }

        private static object TensorOf(OnyxValue value)
        {
            OnyxTensorTypeAndShapeInfo info = value.GetTensorTypeAndShape();
            switch (info.ElementDataType)
            {
                case TensorElementType.Float: return Over<float>(value, info);
                case TensorElementType.Double: return Over<double>(value, info);
                case TensorElementType.Int8: return Over<sbyte>(value, info);
                case TensorElementType.UInt8: return Over<byte>(value, info);
                case TensorElementType.Int16: return Over<short>(value, info);
                case TensorElementType.UInt16: return Over<ushort>(value, info);
                case TensorElementType.Int32: return Over<int>(value, info);
                case TensorElementType.UInt32: return Over<uint>(value, info);
                case TensorElementType.Int64: return Over<long>(value, info);
                case TensorElementType.UInt64: return Over<ulong>(value, info);
                case TensorElementType.Bool: return Over<bool>(value, info);
                case TensorElementType.String:
                    return new DenseTensor<string>(new Memory<string>(value.GetStringTensorAsArray()), Dimensions(info));
                default:
                    throw new OnyxException(ErrorCode.NotImplemented,
                                            "a tensor of " + info.ElementDataType +
                                                " has no C# element type: read it with OnyxValue.GetTensorMutableRawData");
            }
        }

        private static DenseTensor<T> Over<T>(OnyxValue value, OnyxTensorTypeAndShapeInfo info)
        {
            var memory = new NativeMemoryManager<T>(value.DataPointer(), (int)info.ElementCount,
                                                    ElementTypes.Size(info.ElementDataType));
            return new DenseTensor<T>(memory.Memory, Dimensions(info));
        }

        private static int[] Dimensions(OnyxTensorTypeAndShapeInfo info)
        {
            var dims = new int[info.Shape.Length];
            for (int i = 0; i < dims.Length; ++i)
            {
                dims[i] = checked((int)info.Shape[i]);
            }
            return dims;
        }

        // Maps are copied into a Dictionary<K, V> of the keys' and values' C# types.
        private static object DictionaryOf(OnyxValue map)
        {
            using (OnyxValue keys = map.GetValue(0, OnyxAllocator.DefaultInstance))
            using (OnyxValue values = map.GetValue(1, OnyxAllocator.DefaultInstance))
            {
                Type keyType = ElementTypes.ClrType(keys.GetTensorTypeAndShape().ElementDataType);
                Type valueType = ElementTypes.ClrType(values.GetTensorTypeAndShape().ElementDataType);
                if (keyType == null || valueType == null)
                {
                    throw new OnyxException(ErrorCode.NotImplemented, "a map whose keys or values have no C# type");
                }
                var dictionaryType = typeof(Dictionary<,>).MakeGenericType(keyType, valueType);
                var dictionary = (IDictionary)Activator.CreateInstance(dictionaryType);
                object keyTensor = TensorOf(keys);
                object valueTensor = TensorOf(values);
                IEnumerator k = ((IEnumerable)keyTensor).GetEnumerator();
                IEnumerator v = ((IEnumerable)valueTensor).GetEnumerator();
                while (k.MoveNext() && v.MoveNext())
                {
                    dictionary.Add(k.Current, v.Current);
                }
                return dictionary;
            }
        }

        public void Dispose()
        {
            if (children != null)
            {
                foreach (DisposableNamedOnnxValue child in children)
                {
                    child.Dispose();
                }
            }
            if (owned != null)
            {
                owned.Dispose();
                owned = null;
            }
        }
    }

    /// <summary>A run's results: dispose it to release them all.</summary>
    public interface IDisposableReadOnlyCollection<T> : IReadOnlyList<T>, IDisposable
    {
    }

    internal sealed class DisposableList<T> : List<T>, IDisposableReadOnlyCollection<T> where T : IDisposable
    {
        internal DisposableList(int capacity) : base(capacity)
        {
        }

        public void Dispose()
        {
            foreach (T item in this)
            {
                if (item != null)
                {
                    item.Dispose();
                }
            }
            Clear();
        }
    }
}

// Which C# type stands for which element type, and element sizes.
using System;

namespace Onyx
{
    internal static class ElementTypes
    {
        /// <summary>The element type of C# type T, or throws for a type with no
        /// ONNX counterpart.</summary>
        internal static TensorElementType Of<T>()
        {
            Type t = typeof(T);
            if (t == typeof(float)) return TensorElementType.Float;
            if (t == typeof(double)) return TensorElementType.Double;
            if (t == typeof(sbyte)) return TensorElementType.Int8;
            if (t == typeof(byte)) return TensorElementType.UInt8;
            if (t == typeof(short)) return TensorElementType.Int16;
            if (t == typeof(ushort)) return TensorElementType.UInt16;
            if (t == typeof(int)) return TensorElementType.Int32;
            if (t == typeof(uint)) return TensorElementType.UInt32;
            if (t == typeof(long)) return TensorElementType.Int64;
            if (t == typeof(ulong)) return TensorElementType.UInt64;
            if (t == typeof(bool)) return TensorElementType.Bool;
            if (t == typeof(string)) return TensorElementType.String;
            throw new OnyxException(ErrorCode.InvalidArgument,
                                    "tensors of " + t.Name + " are not supported: use float, double, sbyte, byte, short, " +
                                        "ushort, int, uint, long, ulong, bool or string");
        }

        /// <summary>The C# type of an element type; null where C# has none (float16, ...).</summary>
        internal static Type ClrType(TensorElementType type)
        {
            switch (type)
            {
                case TensorElementType.Float: return typeof(float);
                case TensorElementType.Double: return typeof(double);
                case TensorElementType.Int8: return typeof(sbyte);
                case TensorElementType.UInt8: return typeof(byte);
                case TensorElementType.Int16: return typeof(short);
                case TensorElementType.UInt16: return typeof(ushort);
                case TensorElementType.Int32: return typeof(int);
                case TensorElementType.UInt32: return typeof(uint);
                case TensorElementType.Int64: return typeof(long);
                case TensorElementType.UInt64: return typeof(ulong);
                case TensorElementType.Bool: return typeof(bool);
                case TensorElementType.String: return typeof(string);
                default: return null;
            }
        }

        /// <summary>Bytes per element in memory (bool is one byte in a managed
        /// array as in onyx); 0 for strings and types without a C# counterpart.</summary>
        internal static int Size(TensorElementType type)
        {
            switch (type)
            {
                case TensorElementType.Int8:
                case TensorElementType.UInt8:
                case TensorElementType.Bool:
                    return 1;
                case TensorElementType.Int16:
                case TensorElementType.UInt16:
                case TensorElementType.Float16:
                case TensorElementType.BFloat16:
                    return 2;
                case TensorElementType.Float:
                case TensorElementType.Int32:
                case TensorElementType.UInt32:
                    return 4;
                case TensorElementType.Double:
                case TensorElementType.Int64:
                case TensorElementType.UInt64:
                case TensorElementType.Complex64:
                    return 8;
                case TensorElementType.Complex128:
                    return 16;
                default:
                    return 0;
            }
        }
    }
}

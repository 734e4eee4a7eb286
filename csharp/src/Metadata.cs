// What a session says about its inputs, outputs and model (onnxruntime's
// NodeMetadata and ModelMetadata): read once, plain managed objects.
using System;
using System.Collections.Generic;
using System.Runtime.InteropServices;

namespace Onyx
{
    public class NodeMetadata
    {
        internal NodeMetadata(OnnxValueType valueType, OnyxTensorTypeAndShapeInfo tensor)
        {
            OnnxValueType = valueType;
            if (tensor != null)
            {
                ElementDataType = tensor.ElementDataType;
                ElementType = ElementTypes.ClrType(tensor.ElementDataType);
                SymbolicDimensions = tensor.SymbolicShape;
                Dimensions = new int[tensor.Shape.Length];
                for (int i = 0; i < Dimensions.Length; ++i)
                {
                    Dimensions[i] = (int)Math.Max(Math.Min(tensor.Shape[i], int.MaxValue), -1);
                }
            }
            else
            {
                Dimensions = new int[0];
                SymbolicDimensions = new string[0];
            }
        }

        public OnnxValueType OnnxValueType { get; private set; }
        /// <summary>The dimensions; -1 where unknown or symbolic.</summary>
        public int[] Dimensions { get; private set; }
        /// <summary>The dimensions' symbols ("batch"); "" where none.</summary>
        public string[] SymbolicDimensions { get; private set; }
        /// <summary>The C# type of the elements (null when not a tensor, or none fits).</summary>
        public Type ElementType { get; private set; }
        public TensorElementType ElementDataType { get; private set; }
        public bool IsTensor { get { return OnnxValueType == OnnxValueType.ONNX_TYPE_TENSOR; } }
        public bool IsString { get { return IsTensor && ElementDataType == TensorElementType.String; } }

        /// <summary>Reads and releases a native OnyxTypeInfo.</summary>
        internal static NodeMetadata TakeTypeInfo(IntPtr typeInfo)
        {
            try
            {
                OnnxValueType type;
                NativeApiStatus.VerifySuccess(NativeMethods.GetOnnxTypeFromTypeInfo(typeInfo, out type));
                OnyxTensorTypeAndShapeInfo tensor = null;
                if (type == OnnxValueType.ONNX_TYPE_TENSOR)
                {
                    IntPtr info; // owned by the type info
                    NativeApiStatus.VerifySuccess(NativeMethods.CastTypeInfoToTensorInfo(typeInfo, out info));
                    if (info != IntPtr.Zero)
                    {
                        tensor = OnyxTensorTypeAndShapeInfo.Read(info);
                    }
                }
                return new NodeMetadata(type, tensor);
            }
            finally
            {
                NativeMethods.ReleaseTypeInfo(typeInfo);
            }
        }
    }

    public class ModelMetadata
    {
        internal ModelMetadata(IntPtr metadata)
        {
            IntPtr allocator = OnyxAllocator.DefaultInstance.Pointer;
            ProducerName = Take(NativeMethods.ModelMetadataGetProducerName, metadata, allocator);
            GraphName = Take(NativeMethods.ModelMetadataGetGraphName, metadata, allocator);
            Domain = Take(NativeMethods.ModelMetadataGetDomain, metadata, allocator);
            Description = Take(NativeMethods.ModelMetadataGetDescription, metadata, allocator);
            GraphDescription = Take(NativeMethods.ModelMetadataGetGraphDescription, metadata, allocator);
            long version;
            NativeApiStatus.VerifySuccess(NativeMethods.ModelMetadataGetVersion(metadata, out version));
            Version = version;

            CustomMetadataMap = new Dictionary<string, string>();
            IntPtr keys;
            long count;
            NativeApiStatus.VerifySuccess(NativeMethods.ModelMetadataGetCustomMetadataMapKeys(metadata, allocator, out keys, out count));
            if (keys == IntPtr.Zero)
            {
                return;
            }
            try
            {
                for (int i = 0; i < count; ++i)
                {
                    string key = NativeStrings.TakeAllocated(Marshal.ReadIntPtr(keys, i * IntPtr.Size));
                    IntPtr value;
                    NativeApiStatus.VerifySuccess(NativeMethods.ModelMetadataLookupCustomMetadataMap(
                        metadata, allocator, NativeStrings.ToUtf8(key), out value));
                    CustomMetadataMap[key] = NativeStrings.TakeAllocated(value);
                }
            }
            finally
            {
                NativeApiStatus.VerifySuccess(NativeMethods.AllocatorFree(allocator, keys));
            }
        }

        public string ProducerName { get; private set; }
        public string GraphName { get; private set; }
        public string Domain { get; private set; }
        public string Description { get; private set; }
        public string GraphDescription { get; private set; }
        public long Version { get; private set; }
        public Dictionary<string, string> CustomMetadataMap { get; private set; }

        private static string Take(NativeMethods.DGetAllocatedString get, IntPtr metadata, IntPtr allocator)
        {
            IntPtr value;
            NativeApiStatus.VerifySuccess(get(metadata, allocator, out value));
            return NativeStrings.TakeAllocated(value);
        }
    }
}

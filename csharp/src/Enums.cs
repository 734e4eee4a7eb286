// The C API's enumerations with onnxruntime's C# names and values (Ort ->
// Onyx; constants keep the C header's ONYX_ spelling where onnxruntime's C#
// keeps ORT_).
namespace Onyx
{
    /// <summary>A status's error code (the C API's OnyxErrorCode).</summary>
    public enum ErrorCode
    {
        Ok = 0,
        Fail = 1,
        InvalidArgument = 2,
        NoSuchFile = 3,
        NoModel = 4,
        EngineError = 5,
        RuntimeException = 6,
        InvalidProtobuf = 7,
        ModelLoaded = 8,
        NotImplemented = 9,
        InvalidGraph = 10,
        ExecutionProviderFailure = 11,
    }

    /// <summary>Element types, numbered as ONNX's TensorProto.DataType.</summary>
    public enum TensorElementType
    {
        DataTypeMax = -1,
        Float = 1,
        UInt8 = 2,
        Int8 = 3,
        UInt16 = 4,
        Int16 = 5,
        Int32 = 6,
        Int64 = 7,
        String = 8,
        Bool = 9,
        Float16 = 10,
        Double = 11,
        UInt32 = 12,
        UInt64 = 13,
        Complex64 = 14,
        Complex128 = 15,
        BFloat16 = 16,
        Float8E4M3FN = 17,
        Float8E4M3FNUZ = 18,
        Float8E5M2 = 19,
        Float8E5M2FNUZ = 20,
        UInt4 = 21,
        Int4 = 22,
        Float4E2M1 = 23,
    }

    /// <summary>What a value is (the C API's ONNXType).</summary>
    public enum OnnxValueType
    {
        ONNX_TYPE_UNKNOWN = 0,
        ONNX_TYPE_TENSOR = 1,
        ONNX_TYPE_SEQUENCE = 2,
        ONNX_TYPE_MAP = 3,
        ONNX_TYPE_OPAQUE = 4,
        ONNX_TYPE_SPARSETENSOR = 5,
        ONNX_TYPE_OPTIONAL = 6,
    }

    public enum GraphOptimizationLevel
    {
        ONYX_DISABLE_ALL = 0,
        ONYX_ENABLE_BASIC = 1,
        ONYX_ENABLE_EXTENDED = 2,
        /// <summary>onyx's own level between extended and all (layout passes such as NCHWc).</summary>
        ONYX_ENABLE_LAYOUT = 3,
        ONYX_ENABLE_ALL = 99,
    }

    public enum ExecutionMode
    {
        ONYX_SEQUENTIAL = 0,
        ONYX_PARALLEL = 1,
    }

    public enum OnyxLoggingLevel
    {
        ONYX_LOGGING_LEVEL_VERBOSE = 0,
        ONYX_LOGGING_LEVEL_INFO = 1,
        ONYX_LOGGING_LEVEL_WARNING = 2,
        ONYX_LOGGING_LEVEL_ERROR = 3,
        ONYX_LOGGING_LEVEL_FATAL = 4,
    }

    public enum OnyxAllocatorType
    {
        InvalidAllocator = -1,
        DeviceAllocator = 0,
        ArenaAllocator = 1,
    }

    /// <summary>Where a value lives relative to its device.</summary>
    public enum OnyxMemType
    {
        CpuInput = -2,
        CpuOutput = -1,
        Cpu = CpuOutput,
        Default = 0,
    }
}

// The native side of the binding: OnyxGetApiBase, the only symbol of libonyx
// this assembly imports, and the function table it returns, marshalled to
// delegates once (as onnxruntime's C# NativeMethods does with its OrtApi).
using System;
using System.Runtime.InteropServices;

namespace Onyx
{
    // The table exactly as include/onyx/onyx_c_api.h declares `struct OnyxApi`:
    // one pointer per member, in order. tests/python/test_csharp_api.py checks
    // the names against the header, so a member added there fails until it is
    // added here too.
    [StructLayout(LayoutKind.Sequential)]
    internal struct OnyxApi
    {
        public IntPtr CreateStatus;
        public IntPtr GetErrorCode;
        public IntPtr GetErrorMessage;
        public IntPtr ReleaseStatus;
        public IntPtr CreateEnv;
        public IntPtr ReleaseEnv;
        public IntPtr CreateSessionOptions;
        public IntPtr CloneSessionOptions;
        public IntPtr SetIntraOpNumThreads;
        public IntPtr SetInterOpNumThreads;
        public IntPtr SetSessionGraphOptimizationLevel;
        public IntPtr SetSessionExecutionMode;
        public IntPtr SetOptimizedModelFilePath;
        public IntPtr EnableProfiling;
        public IntPtr DisableProfiling;
        public IntPtr EnableMemPattern;
        public IntPtr DisableMemPattern;
        public IntPtr EnableCpuMemArena;
        public IntPtr DisableCpuMemArena;
        public IntPtr SetSessionLogId;
        public IntPtr SetSessionLogSeverityLevel;
        public IntPtr AddSessionConfigEntry;
        public IntPtr AddFreeDimensionOverrideByName;
        public IntPtr AddFreeDimensionOverride;
        public IntPtr AddInitializer;
        public IntPtr SessionOptionsAppendExecutionProvider;
        public IntPtr AddCustomOpDomain;
        public IntPtr RegisterCustomOpsLibrary_V2;
        public IntPtr RegisterCustomOpsUsingFunction;
        public IntPtr ReleaseSessionOptions;
        public IntPtr CreateCustomOpDomain;
        public IntPtr CustomOpDomain_Add;
        public IntPtr ReleaseCustomOpDomain;
        public IntPtr CreateSession;
        public IntPtr CreateSessionFromArray;
        public IntPtr Run;
        public IntPtr SessionGetInputCount;
        public IntPtr SessionGetOutputCount;
        public IntPtr SessionGetOverridableInitializerCount;
        public IntPtr SessionGetInputName;
        public IntPtr SessionGetOutputName;
        public IntPtr SessionGetOverridableInitializerName;
        public IntPtr SessionGetInputTypeInfo;
        public IntPtr SessionGetOutputTypeInfo;
        public IntPtr SessionGetOverridableInitializerTypeInfo;
        public IntPtr SessionGetModelMetadata;
        public IntPtr SessionEndProfiling;
        public IntPtr SessionGetProfilingStartTimeNs;
        public IntPtr ReleaseSession;
        public IntPtr CreateRunOptions;
        public IntPtr RunOptionsSetRunLogSeverityLevel;
        public IntPtr RunOptionsGetRunLogSeverityLevel;
        public IntPtr RunOptionsSetRunTag;
        public IntPtr RunOptionsGetRunTag;
        public IntPtr RunOptionsSetTerminate;
        public IntPtr RunOptionsUnsetTerminate;
        public IntPtr AddRunConfigEntry;
        public IntPtr ReleaseRunOptions;
        public IntPtr CreateCpuMemoryInfo;
        public IntPtr CreateMemoryInfo;
        public IntPtr MemoryInfoGetName;
        public IntPtr MemoryInfoGetId;
        public IntPtr MemoryInfoGetMemType;
        public IntPtr MemoryInfoGetType;
        public IntPtr CompareMemoryInfo;
        public IntPtr ReleaseMemoryInfo;
        public IntPtr GetAllocatorWithDefaultOptions;
        public IntPtr CreateAllocator;
        public IntPtr AllocatorAlloc;
        public IntPtr AllocatorFree;
        public IntPtr AllocatorGetInfo;
        public IntPtr ReleaseAllocator;
        public IntPtr CreateTensorAsOnyxValue;
        public IntPtr CreateTensorWithDataAsOnyxValue;
        public IntPtr IsTensor;
        public IntPtr HasValue;
        public IntPtr GetTensorMutableData;
        public IntPtr GetTensorMemoryInfo;
        public IntPtr FillStringTensor;
        public IntPtr FillStringTensorElement;
        public IntPtr GetStringTensorDataLength;
        public IntPtr GetStringTensorContent;
        public IntPtr GetStringTensorElementLength;
        public IntPtr GetStringTensorElement;
        public IntPtr GetValueType;
        public IntPtr GetTypeInfo;
        public IntPtr GetTensorTypeAndShape;
        public IntPtr GetValueCount;
        public IntPtr GetValue;
        public IntPtr CreateValue;
        public IntPtr ReleaseValue;
        public IntPtr GetOnnxTypeFromTypeInfo;
        public IntPtr CastTypeInfoToTensorInfo;
        public IntPtr CastTypeInfoToSequenceTypeInfo;
        public IntPtr CastTypeInfoToMapTypeInfo;
        public IntPtr GetSequenceElementType;
        public IntPtr GetMapKeyType;
        public IntPtr GetMapValueType;
        public IntPtr GetDenotationFromTypeInfo;
        public IntPtr ReleaseTypeInfo;
        public IntPtr CreateTensorTypeAndShapeInfo;
        public IntPtr SetTensorElementType;
        public IntPtr SetDimensions;
        public IntPtr GetTensorElementType;
        public IntPtr GetDimensionsCount;
        public IntPtr GetDimensions;
        public IntPtr GetSymbolicDimensions;
        public IntPtr GetTensorShapeElementCount;
        public IntPtr ReleaseTensorTypeAndShapeInfo;
        public IntPtr ModelMetadataGetProducerName;
        public IntPtr ModelMetadataGetGraphName;
        public IntPtr ModelMetadataGetDomain;
        public IntPtr ModelMetadataGetDescription;
        public IntPtr ModelMetadataGetGraphDescription;
        public IntPtr ModelMetadataGetVersion;
        public IntPtr ModelMetadataLookupCustomMetadataMap;
        public IntPtr ModelMetadataGetCustomMetadataMapKeys;
        public IntPtr ReleaseModelMetadata;
        public IntPtr CreateIoBinding;
        public IntPtr BindInput;
        public IntPtr BindOutput;
        public IntPtr BindOutputToDevice;
        public IntPtr GetBoundOutputNames;
        public IntPtr GetBoundOutputValues;
        public IntPtr ClearBoundInputs;
        public IntPtr ClearBoundOutputs;
        public IntPtr RunWithBinding;
        public IntPtr ReleaseIoBinding;
        public IntPtr KernelInfoGetAttribute_float;
        public IntPtr KernelInfoGetAttribute_int64;
        public IntPtr KernelInfoGetAttribute_string;
        public IntPtr KernelInfoGetAttributeArray_float;
        public IntPtr KernelInfoGetAttributeArray_int64;
        public IntPtr KernelInfo_GetInputCount;
        public IntPtr KernelInfo_GetOutputCount;
        public IntPtr KernelInfo_GetNodeName;
        public IntPtr KernelContext_GetInputCount;
        public IntPtr KernelContext_GetOutputCount;
        public IntPtr KernelContext_GetInput;
        public IntPtr KernelContext_GetOutput;
        public IntPtr ShapeInferContext_GetInputCount;
        public IntPtr ShapeInferContext_GetInputTypeShape;
        public IntPtr ShapeInferContext_SetOutputTypeShape;
        public IntPtr GetAvailableProviders;
        public IntPtr ReleaseAvailableProviders;
        public IntPtr GetBuildInfoString;
        public IntPtr SessionGetProviders;
        public IntPtr CastTypeInfoToOptionalTypeInfo;
        public IntPtr GetOptionalContainedTypeInfo;
        public IntPtr CreateNoneValue;
        public IntPtr CreateEmptySequence;
        public IntPtr CopyTensors;
        public IntPtr GetSharedAllocator;
        public IntPtr SessionGetProviderOptions;
        public IntPtr SessionGetMemoryProfile;
    }

    [StructLayout(LayoutKind.Sequential)]
    internal struct OnyxApiBase
    {
        public IntPtr GetApi;
        public IntPtr GetVersionString;
    }

    // size_t is UIntPtr, strings in are NUL-terminated UTF-8 byte arrays
    // (NativeStrings), strings out are IntPtr read back by NativeStrings.
    internal static class NativeMethods
    {
        internal const string LibraryName = "onyx";
        internal const uint ApiVersion = 1; // ONYX_API_VERSION of the header this file follows

        [DllImport(LibraryName, CallingConvention = CallingConvention.Winapi)]
        private static extern IntPtr OnyxGetApiBase();

        [UnmanagedFunctionPointer(CallingConvention.Winapi)] internal delegate IntPtr DGetApi(uint version);
        [UnmanagedFunctionPointer(CallingConvention.Winapi)] internal delegate IntPtr DGetString();

        // Status
        [UnmanagedFunctionPointer(CallingConvention.Winapi)] internal delegate IntPtr DCreateStatus(ErrorCode code, byte[] msg);
        [UnmanagedFunctionPointer(CallingConvention.Winapi)] internal delegate ErrorCode DGetErrorCode(IntPtr status);
        [UnmanagedFunctionPointer(CallingConvention.Winapi)] internal delegate IntPtr DGetErrorMessage(IntPtr status);
        [UnmanagedFunctionPointer(CallingConvention.Winapi)] internal delegate void DRelease(IntPtr handle);

        // Shapes shared by many members
        [UnmanagedFunctionPointer(CallingConvention.Winapi)] internal delegate IntPtr DCreate(out IntPtr created);
        [UnmanagedFunctionPointer(CallingConvention.Winapi)] internal delegate IntPtr DOnHandle(IntPtr handle);
        [UnmanagedFunctionPointer(CallingConvention.Winapi)] internal delegate IntPtr DSetInt(IntPtr handle, int value);
        [UnmanagedFunctionPointer(CallingConvention.Winapi)] internal delegate IntPtr DGetInt(IntPtr handle, out int value);
        [UnmanagedFunctionPointer(CallingConvention.Winapi)] internal delegate IntPtr DSetString(IntPtr handle, byte[] value);
        [UnmanagedFunctionPointer(CallingConvention.Winapi)] internal delegate IntPtr DSetKeyValue(IntPtr handle, byte[] key, byte[] value);
        [UnmanagedFunctionPointer(CallingConvention.Winapi)] internal delegate IntPtr DGetSize(IntPtr handle, out UIntPtr value);
        [UnmanagedFunctionPointer(CallingConvention.Winapi)] internal delegate IntPtr DGetHandle(IntPtr handle, out IntPtr value);
        [UnmanagedFunctionPointer(CallingConvention.Winapi)] internal delegate IntPtr DGetAllocatedString(IntPtr handle, IntPtr allocator, out IntPtr value);
        [UnmanagedFunctionPointer(CallingConvention.Winapi)] internal delegate IntPtr DGetIndexedString(IntPtr handle, UIntPtr index, IntPtr allocator, out IntPtr value);
        [UnmanagedFunctionPointer(CallingConvention.Winapi)] internal delegate IntPtr DGetIndexedHandle(IntPtr handle, UIntPtr index, out IntPtr value);

        // Environment
        [UnmanagedFunctionPointer(CallingConvention.Winapi)] internal delegate IntPtr DCreateEnv(OnyxLoggingLevel level, byte[] logid, out IntPtr env);

        // Session options
        [UnmanagedFunctionPointer(CallingConvention.Winapi)] internal delegate IntPtr DCloneSessionOptions(IntPtr options, out IntPtr clone);
        [UnmanagedFunctionPointer(CallingConvention.Winapi)] internal delegate IntPtr DSetSessionGraphOptimizationLevel(IntPtr options, GraphOptimizationLevel level);
        [UnmanagedFunctionPointer(CallingConvention.Winapi)] internal delegate IntPtr DSetSessionExecutionMode(IntPtr options, ExecutionMode mode);
        [UnmanagedFunctionPointer(CallingConvention.Winapi)] internal delegate IntPtr DAddFreeDimensionOverride(IntPtr options, byte[] name, long value);
        [UnmanagedFunctionPointer(CallingConvention.Winapi)] internal delegate IntPtr DAddInitializer(IntPtr options, byte[] name, IntPtr value);
        [UnmanagedFunctionPointer(CallingConvention.Winapi)] internal delegate IntPtr DSessionOptionsAppendExecutionProvider(IntPtr options, byte[] providerName, IntPtr[] keys, IntPtr[] values, UIntPtr count);

        // Sessions
        [UnmanagedFunctionPointer(CallingConvention.Winapi)] internal delegate IntPtr DCreateSession(IntPtr env, byte[] modelPath, IntPtr options, out IntPtr session);
        [UnmanagedFunctionPointer(CallingConvention.Winapi)] internal delegate IntPtr DCreateSessionFromArray(IntPtr env, byte[] model, UIntPtr length, IntPtr options, out IntPtr session);
        [UnmanagedFunctionPointer(CallingConvention.Winapi)] internal delegate IntPtr DRun(IntPtr session, IntPtr runOptions, IntPtr[] inputNames, IntPtr[] inputs, UIntPtr inputCount, IntPtr[] outputNames, UIntPtr outputCount, [In, Out] IntPtr[] outputs);
        [UnmanagedFunctionPointer(CallingConvention.Winapi)] internal delegate IntPtr DSessionGetProfilingStartTimeNs(IntPtr session, out ulong nanoseconds);

        // Memory info and allocators
        [UnmanagedFunctionPointer(CallingConvention.Winapi)] internal delegate IntPtr DCreateCpuMemoryInfo(OnyxAllocatorType type, OnyxMemType memType, out IntPtr info);
        [UnmanagedFunctionPointer(CallingConvention.Winapi)] internal delegate IntPtr DCreateMemoryInfo(byte[] name, OnyxAllocatorType type, int id, OnyxMemType memType, out IntPtr info);
        [UnmanagedFunctionPointer(CallingConvention.Winapi)] internal delegate IntPtr DCompareMemoryInfo(IntPtr info1, IntPtr info2, out int result);
        [UnmanagedFunctionPointer(CallingConvention.Winapi)] internal delegate IntPtr DAllocatorFree(IntPtr allocator, IntPtr p);

        // Values
        [UnmanagedFunctionPointer(CallingConvention.Winapi)] internal delegate IntPtr DCreateTensorAsOnyxValue(IntPtr allocator, long[] shape, UIntPtr rank, TensorElementType type, out IntPtr value);
        [UnmanagedFunctionPointer(CallingConvention.Winapi)] internal delegate IntPtr DCreateTensorWithDataAsOnyxValue(IntPtr info, IntPtr data, UIntPtr byteCount, long[] shape, UIntPtr rank, TensorElementType type, out IntPtr value);
        [UnmanagedFunctionPointer(CallingConvention.Winapi)] internal delegate IntPtr DFillStringTensorElement(IntPtr value, byte[] s, UIntPtr index);
        [UnmanagedFunctionPointer(CallingConvention.Winapi)] internal delegate IntPtr DGetStringTensorElement(IntPtr value, UIntPtr length, UIntPtr index, byte[] s);
        [UnmanagedFunctionPointer(CallingConvention.Winapi)] internal delegate IntPtr DGetStringTensorElementLength(IntPtr value, UIntPtr index, out UIntPtr length);
        [UnmanagedFunctionPointer(CallingConvention.Winapi)] internal delegate IntPtr DGetValueType(IntPtr value, out OnnxValueType type);
        [UnmanagedFunctionPointer(CallingConvention.Winapi)] internal delegate IntPtr DGetValue(IntPtr value, int index, IntPtr allocator, out IntPtr element);
        [UnmanagedFunctionPointer(CallingConvention.Winapi)] internal delegate IntPtr DCreateValue(IntPtr[] values, UIntPtr count, OnnxValueType type, out IntPtr value);

        // Type information
        [UnmanagedFunctionPointer(CallingConvention.Winapi)] internal delegate IntPtr DGetOnnxTypeFromTypeInfo(IntPtr typeInfo, out OnnxValueType type);
        [UnmanagedFunctionPointer(CallingConvention.Winapi)] internal delegate IntPtr DGetTensorElementType(IntPtr info, out TensorElementType type);
        [UnmanagedFunctionPointer(CallingConvention.Winapi)] internal delegate IntPtr DGetDimensions(IntPtr info, [Out] long[] dims, UIntPtr count);
        [UnmanagedFunctionPointer(CallingConvention.Winapi)] internal delegate IntPtr DGetSymbolicDimensions(IntPtr info, [Out] IntPtr[] symbols, UIntPtr count);

        // Model metadata
        [UnmanagedFunctionPointer(CallingConvention.Winapi)] internal delegate IntPtr DModelMetadataGetVersion(IntPtr metadata, out long version);
        [UnmanagedFunctionPointer(CallingConvention.Winapi)] internal delegate IntPtr DModelMetadataLookupCustomMetadataMap(IntPtr metadata, IntPtr allocator, byte[] key, out IntPtr value);
        [UnmanagedFunctionPointer(CallingConvention.Winapi)] internal delegate IntPtr DModelMetadataGetCustomMetadataMapKeys(IntPtr metadata, IntPtr allocator, out IntPtr keys, out long count);

        // Providers
        [UnmanagedFunctionPointer(CallingConvention.Winapi)] internal delegate IntPtr DGetAvailableProviders(out IntPtr names, out int count);
        [UnmanagedFunctionPointer(CallingConvention.Winapi)] internal delegate IntPtr DReleaseAvailableProviders(IntPtr names, int count);
        [UnmanagedFunctionPointer(CallingConvention.Winapi)] internal delegate IntPtr DSessionGetProviders(IntPtr session, out IntPtr names, out int count);

        internal static readonly string VersionString;

        internal static readonly DCreateStatus CreateStatus;
        internal static readonly DGetErrorCode GetErrorCode;
        internal static readonly DGetErrorMessage GetErrorMessage;
        internal static readonly DRelease ReleaseStatus;

        internal static readonly DCreateEnv CreateEnv;
        internal static readonly DRelease ReleaseEnv;

        internal static readonly DCreate CreateSessionOptions;
        internal static readonly DCloneSessionOptions CloneSessionOptions;
        internal static readonly DSetInt SetIntraOpNumThreads;
        internal static readonly DSetInt SetInterOpNumThreads;
        internal static readonly DSetSessionGraphOptimizationLevel SetSessionGraphOptimizationLevel;
        internal static readonly DSetSessionExecutionMode SetSessionExecutionMode;
        internal static readonly DSetString SetOptimizedModelFilePath;
        internal static readonly DSetString EnableProfiling;
        internal static readonly DOnHandle DisableProfiling;
        internal static readonly DOnHandle EnableMemPattern;
        internal static readonly DOnHandle DisableMemPattern;
        internal static readonly DOnHandle EnableCpuMemArena;
        internal static readonly DOnHandle DisableCpuMemArena;
        internal static readonly DSetString SetSessionLogId;
        internal static readonly DSetInt SetSessionLogSeverityLevel;
        internal static readonly DSetKeyValue AddSessionConfigEntry;
        internal static readonly DAddFreeDimensionOverride AddFreeDimensionOverrideByName;
        internal static readonly DAddFreeDimensionOverride AddFreeDimensionOverride;
        internal static readonly DAddInitializer AddInitializer;
        internal static readonly DSessionOptionsAppendExecutionProvider SessionOptionsAppendExecutionProvider;
        internal static readonly DSetString RegisterCustomOpsLibrary_V2;
        internal static readonly DRelease ReleaseSessionOptions;

        internal static readonly DCreateSession CreateSession;
        internal static readonly DCreateSessionFromArray CreateSessionFromArray;
        internal static readonly DRun Run;
        internal static readonly DGetSize SessionGetInputCount;
        internal static readonly DGetSize SessionGetOutputCount;
        internal static readonly DGetSize SessionGetOverridableInitializerCount;
        internal static readonly DGetIndexedString SessionGetInputName;
        internal static readonly DGetIndexedString SessionGetOutputName;
        internal static readonly DGetIndexedString SessionGetOverridableInitializerName;
        internal static readonly DGetIndexedHandle SessionGetInputTypeInfo;
        internal static readonly DGetIndexedHandle SessionGetOutputTypeInfo;
        internal static readonly DGetIndexedHandle SessionGetOverridableInitializerTypeInfo;
        internal static readonly DGetHandle SessionGetModelMetadata;
        internal static readonly DGetAllocatedString SessionEndProfiling;
        internal static readonly DSessionGetProfilingStartTimeNs SessionGetProfilingStartTimeNs;
        internal static readonly DRelease ReleaseSession;

        internal static readonly DCreate CreateRunOptions;
        internal static readonly DSetInt RunOptionsSetRunLogSeverityLevel;
        internal static readonly DGetInt RunOptionsGetRunLogSeverityLevel;
        internal static readonly DSetString RunOptionsSetRunTag;
        internal static readonly DGetHandle RunOptionsGetRunTag;
        internal static readonly DOnHandle RunOptionsSetTerminate;
        internal static readonly DOnHandle RunOptionsUnsetTerminate;
        internal static readonly DSetKeyValue AddRunConfigEntry;
        internal static readonly DRelease ReleaseRunOptions;

        internal static readonly DCreateCpuMemoryInfo CreateCpuMemoryInfo;
        internal static readonly DCreateMemoryInfo CreateMemoryInfo;
        internal static readonly DGetHandle MemoryInfoGetName;
        internal static readonly DGetInt MemoryInfoGetId;
        internal static readonly DGetInt MemoryInfoGetMemType;
        internal static readonly DGetInt MemoryInfoGetType;
        internal static readonly DCompareMemoryInfo CompareMemoryInfo;
        internal static readonly DRelease ReleaseMemoryInfo;

        internal static readonly DCreate GetAllocatorWithDefaultOptions;
        internal static readonly DAllocatorFree AllocatorFree;
        internal static readonly DGetHandle AllocatorGetInfo;

        internal static readonly DCreateTensorAsOnyxValue CreateTensorAsOnyxValue;
        internal static readonly DCreateTensorWithDataAsOnyxValue CreateTensorWithDataAsOnyxValue;
        internal static readonly DGetInt IsTensor;
        internal static readonly DGetInt HasValue;
        internal static readonly DGetHandle GetTensorMutableData;
        internal static readonly DFillStringTensorElement FillStringTensorElement;
        internal static readonly DGetStringTensorElementLength GetStringTensorElementLength;
        internal static readonly DGetStringTensorElement GetStringTensorElement;
        internal static readonly DGetValueType GetValueType;
        internal static readonly DGetHandle GetTypeInfo;
        internal static readonly DGetHandle GetTensorTypeAndShape;
        internal static readonly DGetSize GetValueCount;
        internal static readonly DGetValue GetValue;
        internal static readonly DCreateValue CreateValue;
        internal static readonly DRelease ReleaseValue;

        internal static readonly DGetOnnxTypeFromTypeInfo GetOnnxTypeFromTypeInfo;
        internal static readonly DGetHandle CastTypeInfoToTensorInfo;
        internal static readonly DRelease ReleaseTypeInfo;
        internal static readonly DGetTensorElementType GetTensorElementType;
        internal static readonly DGetSize GetDimensionsCount;
        internal static readonly DGetDimensions GetDimensions;
        internal static readonly DGetSymbolicDimensions GetSymbolicDimensions;
        internal static readonly DGetSize GetTensorShapeElementCount;
        internal static readonly DRelease ReleaseTensorTypeAndShapeInfo;

        internal static readonly DGetAllocatedString ModelMetadataGetProducerName;
        internal static readonly DGetAllocatedString ModelMetadataGetGraphName;
        internal static readonly DGetAllocatedString ModelMetadataGetDomain;
        internal static readonly DGetAllocatedString ModelMetadataGetDescription;
        internal static readonly DGetAllocatedString ModelMetadataGetGraphDescription;
        internal static readonly DModelMetadataGetVersion ModelMetadataGetVersion;
        internal static readonly DModelMetadataLookupCustomMetadataMap ModelMetadataLookupCustomMetadataMap;
        internal static readonly DModelMetadataGetCustomMetadataMapKeys ModelMetadataGetCustomMetadataMapKeys;
        internal static readonly DRelease ReleaseModelMetadata;

        internal static readonly DGetAvailableProviders GetAvailableProviders;
        internal static readonly DReleaseAvailableProviders ReleaseAvailableProviders;
        internal static readonly DGetString GetBuildInfoString;
        internal static readonly DSessionGetProviders SessionGetProviders;

        static NativeMethods()
        {
            IntPtr basePointer = OnyxGetApiBase();
            OnyxApiBase apiBase = (OnyxApiBase)Marshal.PtrToStructure(basePointer, typeof(OnyxApiBase));
            VersionString = NativeStrings.FromUtf8(Get<DGetString>(apiBase.GetVersionString)());
            IntPtr table = Get<DGetApi>(apiBase.GetApi)(ApiVersion);
            if (table == IntPtr.Zero)
            {
                // Thrown from a static constructor, so the caller sees a
                // TypeInitializationException whose InnerException is this.
                throw new OnyxException(ErrorCode.Fail, "libonyx " + VersionString + " does not serve C API version " +
                                                            ApiVersion + ": the library is older than this binding");
            }
            OnyxApi api = (OnyxApi)Marshal.PtrToStructure(table, typeof(OnyxApi));

            CreateStatus = Get<DCreateStatus>(api.CreateStatus);
            GetErrorCode = Get<DGetErrorCode>(api.GetErrorCode);
            GetErrorMessage = Get<DGetErrorMessage>(api.GetErrorMessage);
            ReleaseStatus = Get<DRelease>(api.ReleaseStatus);

            CreateEnv = Get<DCreateEnv>(api.CreateEnv);
            ReleaseEnv = Get<DRelease>(api.ReleaseEnv);

            CreateSessionOptions = Get<DCreate>(api.CreateSessionOptions);
            CloneSessionOptions = Get<DCloneSessionOptions>(api.CloneSessionOptions);
            SetIntraOpNumThreads = Get<DSetInt>(api.SetIntraOpNumThreads);
            SetInterOpNumThreads = Get<DSetInt>(api.SetInterOpNumThreads);
            SetSessionGraphOptimizationLevel = Get<DSetSessionGraphOptimizationLevel>(api.SetSessionGraphOptimizationLevel);
            SetSessionExecutionMode = Get<DSetSessionExecutionMode>(api.SetSessionExecutionMode);
            SetOptimizedModelFilePath = Get<DSetString>(api.SetOptimizedModelFilePath);
            EnableProfiling = Get<DSetString>(api.EnableProfiling);
            DisableProfiling = Get<DOnHandle>(api.DisableProfiling);
            EnableMemPattern = Get<DOnHandle>(api.EnableMemPattern);
            DisableMemPattern = Get<DOnHandle>(api.DisableMemPattern);
            EnableCpuMemArena = Get<DOnHandle>(api.EnableCpuMemArena);
            DisableCpuMemArena = Get<DOnHandle>(api.DisableCpuMemArena);
            SetSessionLogId = Get<DSetString>(api.SetSessionLogId);
            SetSessionLogSeverityLevel = Get<DSetInt>(api.SetSessionLogSeverityLevel);
            AddSessionConfigEntry = Get<DSetKeyValue>(api.AddSessionConfigEntry);
            AddFreeDimensionOverrideByName = Get<DAddFreeDimensionOverride>(api.AddFreeDimensionOverrideByName);
            AddFreeDimensionOverride = Get<DAddFreeDimensionOverride>(api.AddFreeDimensionOverride);
            AddInitializer = Get<DAddInitializer>(api.AddInitializer);
            SessionOptionsAppendExecutionProvider = Get<DSessionOptionsAppendExecutionProvider>(api.SessionOptionsAppendExecutionProvider);
            RegisterCustomOpsLibrary_V2 = Get<DSetString>(api.RegisterCustomOpsLibrary_V2);
            ReleaseSessionOptions = Get<DRelease>(api.ReleaseSessionOptions);

            CreateSession = Get<DCreateSession>(api.CreateSession);
            CreateSessionFromArray = Get<DCreateSessionFromArray>(api.CreateSessionFromArray);
            Run = Get<DRun>(api.Run);
            SessionGetInputCount = Get<DGetSize>(api.SessionGetInputCount);
            SessionGetOutputCount = Get<DGetSize>(api.SessionGetOutputCount);
            SessionGetOverridableInitializerCount = Get<DGetSize>(api.SessionGetOverridableInitializerCount);
            SessionGetInputName = Get<DGetIndexedString>(api.SessionGetInputName);
            SessionGetOutputName = Get<DGetIndexedString>(api.SessionGetOutputName);
            SessionGetOverridableInitializerName = Get<DGetIndexedString>(api.SessionGetOverridableInitializerName);
            SessionGetInputTypeInfo = Get<DGetIndexedHandle>(api.SessionGetInputTypeInfo);
            SessionGetOutputTypeInfo = Get<DGetIndexedHandle>(api.SessionGetOutputTypeInfo);
            SessionGetOverridableInitializerTypeInfo = Get<DGetIndexedHandle>(api.SessionGetOverridableInitializerTypeInfo);
            SessionGetModelMetadata = Get<DGetHandle>(api.SessionGetModelMetadata);
            SessionEndProfiling = Get<DGetAllocatedString>(api.SessionEndProfiling);
            SessionGetProfilingStartTimeNs = Get<DSessionGetProfilingStartTimeNs>(api.SessionGetProfilingStartTimeNs);
            ReleaseSession = Get<DRelease>(api.ReleaseSession);

            CreateRunOptions = Get<DCreate>(api.CreateRunOptions);
            RunOptionsSetRunLogSeverityLevel = Get<DSetInt>(api.RunOptionsSetRunLogSeverityLevel);
            RunOptionsGetRunLogSeverityLevel = Get<DGetInt>(api.RunOptionsGetRunLogSeverityLevel);
            RunOptionsSetRunTag = Get<DSetString>(api.RunOptionsSetRunTag);
            RunOptionsGetRunTag = Get<DGetHandle>(api.RunOptionsGetRunTag);
            RunOptionsSetTerminate = Get<DOnHandle>(api.RunOptionsSetTerminate);
            RunOptionsUnsetTerminate = Get<DOnHandle>(api.RunOptionsUnsetTerminate);
            AddRunConfigEntry = Get<DSetKeyValue>(api.AddRunConfigEntry);
            ReleaseRunOptions = Get<DRelease>(api.ReleaseRunOptions);

            CreateCpuMemoryInfo = Get<DCreateCpuMemoryInfo>(api.CreateCpuMemoryInfo);
            CreateMemoryInfo = Get<DCreateMemoryInfo>(api.CreateMemoryInfo);
            MemoryInfoGetName = Get<DGetHandle>(api.MemoryInfoGetName);
            MemoryInfoGetId = Get<DGetInt>(api.MemoryInfoGetId);
            MemoryInfoGetMemType = Get<DGetInt>(api.MemoryInfoGetMemType);
            MemoryInfoGetType = Get<DGetInt>(api.MemoryInfoGetType);
            CompareMemoryInfo = Get<DCompareMemoryInfo>(api.CompareMemoryInfo);
            ReleaseMemoryInfo = Get<DRelease>(api.ReleaseMemoryInfo);

            GetAllocatorWithDefaultOptions = Get<DCreate>(api.GetAllocatorWithDefaultOptions);
            AllocatorFree = Get<DAllocatorFree>(api.AllocatorFree);
            AllocatorGetInfo = Get<DGetHandle>(api.AllocatorGetInfo);

            CreateTensorAsOnyxValue = Get<DCreateTensorAsOnyxValue>(api.CreateTensorAsOnyxValue);
            CreateTensorWithDataAsOnyxValue = Get<DCreateTensorWithDataAsOnyxValue>(api.CreateTensorWithDataAsOnyxValue);
            IsTensor = Get<DGetInt>(api.IsTensor);
            HasValue = Get<DGetInt>(api.HasValue);
            GetTensorMutableData = Get<DGetHandle>(api.GetTensorMutableData);
            FillStringTensorElement = Get<DFillStringTensorElement>(api.FillStringTensorElement);
            GetStringTensorElementLength = Get<DGetStringTensorElementLength>(api.GetStringTensorElementLength);
            GetStringTensorElement = Get<DGetStringTensorElement>(api.GetStringTensorElement);
            GetValueType = Get<DGetValueType>(api.GetValueType);
            GetTypeInfo = Get<DGetHandle>(api.GetTypeInfo);
            GetTensorTypeAndShape = Get<DGetHandle>(api.GetTensorTypeAndShape);
            GetValueCount = Get<DGetSize>(api.GetValueCount);
            GetValue = Get<DGetValue>(api.GetValue);
            CreateValue = Get<DCreateValue>(api.CreateValue);
            ReleaseValue = Get<DRelease>(api.ReleaseValue);

            GetOnnxTypeFromTypeInfo = Get<DGetOnnxTypeFromTypeInfo>(api.GetOnnxTypeFromTypeInfo);
            CastTypeInfoToTensorInfo = Get<DGetHandle>(api.CastTypeInfoToTensorInfo);
            ReleaseTypeInfo = Get<DRelease>(api.ReleaseTypeInfo);
            GetTensorElementType = Get<DGetTensorElementType>(api.GetTensorElementType);
            GetDimensionsCount = Get<DGetSize>(api.GetDimensionsCount);
            GetDimensions = Get<DGetDimensions>(api.GetDimensions);
            GetSymbolicDimensions = Get<DGetSymbolicDimensions>(api.GetSymbolicDimensions);
            GetTensorShapeElementCount = Get<DGetSize>(api.GetTensorShapeElementCount);
            ReleaseTensorTypeAndShapeInfo = Get<DRelease>(api.ReleaseTensorTypeAndShapeInfo);

            ModelMetadataGetProducerName = Get<DGetAllocatedString>(api.ModelMetadataGetProducerName);
            ModelMetadataGetGraphName = Get<DGetAllocatedString>(api.ModelMetadataGetGraphName);
            ModelMetadataGetDomain = Get<DGetAllocatedString>(api.ModelMetadataGetDomain);
            ModelMetadataGetDescription = Get<DGetAllocatedString>(api.ModelMetadataGetDescription);
            ModelMetadataGetGraphDescription = Get<DGetAllocatedString>(api.ModelMetadataGetGraphDescription);
            ModelMetadataGetVersion = Get<DModelMetadataGetVersion>(api.ModelMetadataGetVersion);
            ModelMetadataLookupCustomMetadataMap = Get<DModelMetadataLookupCustomMetadataMap>(api.ModelMetadataLookupCustomMetadataMap);
            ModelMetadataGetCustomMetadataMapKeys = Get<DModelMetadataGetCustomMetadataMapKeys>(api.ModelMetadataGetCustomMetadataMapKeys);
            ReleaseModelMetadata = Get<DRelease>(api.ReleaseModelMetadata);

            GetAvailableProviders = Get<DGetAvailableProviders>(api.GetAvailableProviders);
            ReleaseAvailableProviders = Get<DReleaseAvailableProviders>(api.ReleaseAvailableProviders);
            GetBuildInfoString = Get<DGetString>(api.GetBuildInfoString);
            SessionGetProviders = Get<DSessionGetProviders>(api.SessionGetProviders);
        }

        private static T Get<T>(IntPtr function) where T : class
        {
            if (function == IntPtr.Zero)
            {
                throw new OnyxException(ErrorCode.Fail, "libonyx's C API table has a NULL where a " + typeof(T).Name + " belongs");
            }
            return (T)(object)Marshal.GetDelegateForFunctionPointer(function, typeof(T));
        }
    }
}

// Memory descriptions and allocators (onnxruntime's OrtMemoryInfo and
// OrtAllocator).
using System;

namespace Onyx
{
    public sealed class OnyxMemoryInfo : IDisposable
    {
        /// <summary>The name of host memory.</summary>
        public const string allocatorCPU = "Cpu";

        private static readonly Lazy<OnyxMemoryInfo> defaultInstance = new Lazy<OnyxMemoryInfo>(() =>
        {
            IntPtr info;
            NativeApiStatus.VerifySuccess(
                NativeMethods.CreateCpuMemoryInfo(OnyxAllocatorType.ArenaAllocator, OnyxMemType.Default, out info));
            return new OnyxMemoryInfo(new NativeHandle(info, NativeMethods.ReleaseMemoryInfo), true);
        });

        private readonly NativeHandle handle;
        private readonly bool shared;

        private OnyxMemoryInfo(NativeHandle handle, bool shared)
        {
            this.handle = handle;
            this.shared = shared;
        }

        /// <summary>Host memory (CPU, arena allocator, default memory type): what
        /// values over managed arrays describe. Shared: Dispose does nothing.</summary>
        public static OnyxMemoryInfo DefaultInstance { get { return defaultInstance.Value; } }

        public OnyxMemoryInfo(string name, OnyxAllocatorType allocatorType, int deviceId, OnyxMemType memoryType)
        {
            IntPtr info;
            NativeApiStatus.VerifySuccess(
                NativeMethods.CreateMemoryInfo(NativeStrings.ToUtf8(name), allocatorType, deviceId, memoryType, out info));
            handle = new NativeHandle(info, NativeMethods.ReleaseMemoryInfo);
        }

        /// <summary>A view of memory info another object owns.</summary>
        internal static OnyxMemoryInfo Borrowed(IntPtr info)
        {
            return new OnyxMemoryInfo(new NativeHandle(info, null), true);
        }

        internal IntPtr Pointer { get { return handle.Pointer; } }

        public string Name
        {
            get
            {
                IntPtr name;
                NativeApiStatus.VerifySuccess(NativeMethods.MemoryInfoGetName(Pointer, out name));
                return NativeStrings.FromUtf8(name);
            }
        }

        public int Id
        {
            get
            {
                int id;
                NativeApiStatus.VerifySuccess(NativeMethods.MemoryInfoGetId(Pointer, out id));
                return id;
            }
        }

        public OnyxMemType GetMemoryType()
        {
            int type;
            NativeApiStatus.VerifySuccess(NativeMethods.MemoryInfoGetMemType(Pointer, out type));
            return (OnyxMemType)type;
        }

        public OnyxAllocatorType GetAllocatorType()
        {
            int type;
            NativeApiStatus.VerifySuccess(NativeMethods.MemoryInfoGetType(Pointer, out type));
            return (OnyxAllocatorType)type;
        }

        /// <summary>Whether both describe the same memory (CompareMemoryInfo).</summary>
        public bool Equals(OnyxMemoryInfo other)
        {
            if (other == null)
            {
                return false;
            }
            int result;
            NativeApiStatus.VerifySuccess(NativeMethods.CompareMemoryInfo(Pointer, other.Pointer, out result));
            return result == 0;
        }

        public override bool Equals(object obj)
        {
            return Equals(obj as OnyxMemoryInfo);
        }

        public override int GetHashCode()
        {
            return Name.GetHashCode() ^ Id;
        }

        public void Dispose()
        {
            if (!shared)
            {
                handle.Dispose();
            }
        }
    }

    /// <summary>An allocator of onyx's. The default one, the process's host
    /// allocator, is never released.</summary>
    public sealed class OnyxAllocator
    {
        private static readonly Lazy<OnyxAllocator> defaultInstance = new Lazy<OnyxAllocator>(() =>
        {
            IntPtr allocator;
            NativeApiStatus.VerifySuccess(NativeMethods.GetAllocatorWithDefaultOptions(out allocator));
            return new OnyxAllocator(allocator);
        });

        private readonly IntPtr pointer;

        private OnyxAllocator(IntPtr pointer)
        {
            this.pointer = pointer;
        }

        public static OnyxAllocator DefaultInstance { get { return defaultInstance.Value; } }

        internal IntPtr Pointer { get { return pointer; } }

        /// <summary>The memory this allocator serves (owned by the allocator).</summary>
        public OnyxMemoryInfo Info
        {
            get
            {
                IntPtr info;
                NativeApiStatus.VerifySuccess(NativeMethods.AllocatorGetInfo(pointer, out info));
                return OnyxMemoryInfo.Borrowed(info);
            }
        }
    }
}

// Strings across the C API: UTF-8 both ways, whatever the platform's ANSI
// code page (so no reliance on the marshaller's LPStr, which is ANSI on
// Windows .NET).
using System;
using System.Collections.Generic;
using System.Runtime.InteropServices;
using System.Text;

namespace Onyx
{
    internal static class NativeStrings
    {
        /// <summary>The string as NUL-terminated UTF-8; null stays null (a NULL pointer).</summary>
        internal static byte[] ToUtf8(string s)
        {
            if (s == null)
            {
                return null;
            }
            int length = Encoding.UTF8.GetByteCount(s);
            byte[] bytes = new byte[length + 1];
            Encoding.UTF8.GetBytes(s, 0, s.Length, bytes, 0);
            return bytes;
        }

        /// <summary>A NUL-terminated UTF-8 string at p (null for NULL).</summary>
        internal static string FromUtf8(IntPtr p)
        {
            if (p == IntPtr.Zero)
            {
                return null;
            }
            int length = 0;
            while (Marshal.ReadByte(p, length) != 0)
            {
                ++length;
            }
            return FromUtf8(p, length);
        }

        internal static string FromUtf8(IntPtr p, int length)
        {
            byte[] bytes = new byte[length];
            Marshal.Copy(p, bytes, 0, length);
            return Encoding.UTF8.GetString(bytes, 0, length);
        }

        /// <summary>Reads a string the C API allocated with the default allocator, then frees it.</summary>
        internal static string TakeAllocated(IntPtr p)
        {
            try
            {
                return FromUtf8(p);
            }
            finally
            {
                if (p != IntPtr.Zero)
                {
                    NativeApiStatus.VerifySuccess(NativeMethods.AllocatorFree(OnyxAllocator.DefaultInstance.Pointer, p));
                }
            }
        }
    }

    /// <summary>An array of `const char*` for the C API: each string in native
    /// memory until Dispose.</summary>
    internal sealed class NativeStringArray : IDisposable
    {
        private readonly IntPtr[] pointers;

        internal NativeStringArray(IEnumerable<string> strings)
        {
            var list = new List<IntPtr>();
            try
            {
                foreach (string s in strings)
                {
                    if (s == null)
                    {
                        throw new ArgumentNullException("strings", "a name is null");
                    }
                    byte[] bytes = NativeStrings.ToUtf8(s);
                    IntPtr p = Marshal.AllocHGlobal(bytes.Length);
                    Marshal.Copy(bytes, 0, p, bytes.Length);
                    list.Add(p);
                }
            }
            catch
            {
                foreach (IntPtr p in list)
                {
                    Marshal.FreeHGlobal(p);
                }
                throw;
            }
            pointers = list.ToArray();
        }

        internal IntPtr[] Pointers { get { return pointers; } }

        internal int Length { get { return pointers.Length; } }

        public void Dispose()
        {
            for (int i = 0; i < pointers.Length; ++i)
            {
                if (pointers[i] != IntPtr.Zero)
                {
                    Marshal.FreeHGlobal(pointers[i]);
                    pointers[i] = IntPtr.Zero;
                }
            }
        }
    }
}

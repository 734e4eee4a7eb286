// Element-type facts: sizes and ONNX names.
#include "onyx/dtype.h"

namespace onyx {

size_t dtype_size(DataType type) {
  switch (type) {
    case DataType::kFloat: return 4;
    case DataType::kUInt8: return 1;
    case DataType::kInt8: return 1;
    case DataType::kUInt16: return 2;
    case DataType::kInt16: return 2;
    case DataType::kInt32: return 4;
    case DataType::kInt64: return 8;
    case DataType::kString: return sizeof(std::string);
    case DataType::kBool: return 1;
    case DataType::kFloat16: return 2;
    case DataType::kDouble: return 8;
    case DataType::kUInt32: return 4;
    case DataType::kUInt64: return 8;
    case DataType::kComplex64: return 8;
    case DataType::kComplex128: return 16;
    case DataType::kBFloat16: return 2;
    case DataType::kFloat8E4M3FN:
    case DataType::kFloat8E4M3FNUZ:
    case DataType::kFloat8E5M2:
    case DataType::kFloat8E5M2FNUZ:
    case DataType::kFloat8E8M0:
    case DataType::kUInt4:
    case DataType::kInt4:
    case DataType::kFloat4E2M1:
    case DataType::kUInt2:
    case DataType::kInt2: return 1;
    case DataType::kUndefined: return 0;
  }
  return 0;
}

const char* dtype_name(DataType type) {
  switch (type) {
    case DataType::kFloat: return "float";
    case DataType::kUInt8: return "uint8";
    case DataType::kInt8: return "int8";
    case DataType::kUInt16: return "uint16";
    case DataType::kInt16: return "int16";
    case DataType::kInt32: return "int32";
    case DataType::kInt64: return "int64";
    case DataType::kString: return "string";
    case DataType::kBool: return "bool";
    case DataType::kFloat16: return "float16";
    case DataType::kDouble: return "double";
    case DataType::kUInt32: return "uint32";
    case DataType::kUInt64: return "uint64";
    case DataType::kComplex64: return "complex64";
    case DataType::kComplex128: return "complex128";
    case DataType::kBFloat16: return "bfloat16";
    case DataType::kFloat8E4M3FN: return "float8e4m3fn";
    case DataType::kFloat8E4M3FNUZ: return "float8e4m3fnuz";
    case DataType::kFloat8E5M2: return "float8e5m2";
    case DataType::kFloat8E5M2FNUZ: return "float8e5m2fnuz";
    case DataType::kUInt4: return "uint4";
    case DataType::kInt4: return "int4";
    case DataType::kFloat4E2M1: return "float4e2m1";
    case DataType::kFloat8E8M0: return "float8e8m0";
    case DataType::kUInt2: return "uint2";
    case DataType::kInt2: return "int2";
    case DataType::kUndefined: return "undefined";
  }
  return "undefined";
}

bool dtype_is_known(int32_t value) { return value >= 1 && value <= 26; }

}  // namespace onyx

// .npy files, random feeds, value previews and memory readings for the CLI.
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

#include "cli.h"

namespace onyx::cli {
namespace {

struct NpyType {
  const char* descr;
  DataType dtype;
};
constexpr NpyType kNpyTypes[] = {
    {"<f4", DataType::kFloat},  {"<f8", DataType::kDouble}, {"<f2", DataType::kFloat16}, {"<i1", DataType::kInt8},
    {"|i1", DataType::kInt8},   {"<i2", DataType::kInt16},  {"<i4", DataType::kInt32},   {"<i8", DataType::kInt64},
    {"|u1", DataType::kUInt8},  {"<u1", DataType::kUInt8},  {"<u2", DataType::kUInt16},  {"<u4", DataType::kUInt32},
    {"<u8", DataType::kUInt64}, {"|b1", DataType::kBool},
};

}  // namespace

Result<Tensor> read_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return invalid_argument("cannot open '", path, "'");
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0) return invalid_argument("'", path, "' is not a .npy file");
  const int major = static_cast<unsigned char>(bytes[6]);
  size_t header_len = 0;
  size_t offset = 0;
  if (major == 1) {
    header_len = static_cast<unsigned char>(bytes[8]) | (static_cast<size_t>(static_cast<unsigned char>(bytes[9])) << 8);
    offset = 10;
  } else {
    if (bytes.size() < 12) return invalid_argument("'", path, "' is truncated");
    header_len = 0;
    for (int i = 0; i < 4; ++i) header_len |= static_cast<size_t>(static_cast<unsigned char>(bytes[8 + i])) << (8 * i);
    offset = 12;
  }
  if (offset + header_len > bytes.size()) return invalid_argument("'", path, "' is truncated");
  const std::string header = bytes.substr(offset, header_len);
  offset += header_len;
  auto field = [&](const std::string& key) -> std::string {
    const size_t k = header.find("'" + key + "'");
    if (k == std::string::npos) return "";
    size_t v = header.find(':', k) + 1;
    while (v < header.size() && header[v] == ' ') ++v;
    if (header[v] == '\'') return header.substr(v + 1, header.find('\'', v + 1) - v - 1);
    if (header[v] == '(') return header.substr(v + 1, header.find(')', v) - v - 1);
    return header.substr(v, header.find_first_of(",}", v) - v);
  };
  const std::string descr = field("descr");
  if (field("fortran_order") == "True") return invalid_argument("'", path, "': Fortran-ordered arrays are not supported");
  DataType dtype = DataType::kUndefined;
  for (const NpyType& t : kNpyTypes) {
    if (descr == t.descr) dtype = t.dtype;
  }
  if (dtype == DataType::kUndefined) return invalid_argument("'", path, "': unsupported dtype '", descr, "'");
  Shape shape;
  std::stringstream dims(field("shape"));
  std::string item;
  while (std::getline(dims, item, ',')) {
    if (item.find_first_not_of(' ') == std::string::npos) continue;
    shape.push_back(std::stoll(item));
  }
  ONYX_ASSIGN_OR_RETURN(Tensor t, Tensor::create(dtype, shape));
  if (bytes.size() - offset < t.bytes()) return invalid_argument("'", path, "' holds fewer bytes than its shape needs");
  std::memcpy(t.raw_data(), bytes.data() + offset, t.bytes());
  return t;
}

Status write_npy(const Tensor& tensor, const std::string& path) {
  const char* descr = nullptr;
  for (const NpyType& t : kNpyTypes) {
    if (t.dtype == tensor.dtype() && descr == nullptr) descr = t.descr;
  }
  if (descr == nullptr) return not_implemented("cannot write ", dtype_name(tensor.dtype()), " tensors as .npy");
  std::string shape;
  for (int64_t d : tensor.shape()) shape += std::to_string(d) + ",";
  if (tensor.rank() > 1) shape.pop_back();
  std::string header = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': (" + shape + "), }";
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::ofstream out(path, std::ios::binary);
  if (!out) return invalid_argument("cannot write '", path, "'");
  out.write("\x93NUMPY\x01\x00", 8);
  const uint16_t len = static_cast<uint16_t>(header.size());
  out.put(static_cast<char>(len & 0xff));
  out.put(static_cast<char>(len >> 8));
  out << header;
  out.write(static_cast<const char*>(tensor.raw_data()), static_cast<std::streamsize>(tensor.bytes()));
  return Status::ok();
}

Result<Feeds> random_feeds(const InferenceSession& session, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  Feeds feeds;
  for (const ValueMetadata& m : session.inputs()) {
    if (m.type.kind != ValueType::Kind::kTensor) {
      return not_implemented("input '", m.name, "' is a ", m.type.to_string(), "; give it with --input");
    }
    Shape shape;
    for (int64_t d : m.dims) shape.push_back(d >= 0 ? d : 1);
    ONYX_ASSIGN_OR_RETURN(Tensor t, Tensor::create(m.type.elem_type, shape));
    const int64_t n = t.size();
    for (int64_t i = 0; i < n; ++i) {
      const double u = unit(rng);
      switch (t.dtype()) {
        case DataType::kFloat: t.data<float>()[i] = static_cast<float>(u); break;
        case DataType::kDouble: t.data<double>()[i] = u; break;
        case DataType::kFloat16: t.data<Float16>()[i] = Float16(static_cast<float>(u)); break;
        case DataType::kBFloat16: t.data<BFloat16>()[i] = BFloat16(static_cast<float>(u)); break;
        case DataType::kInt8: t.data<int8_t>()[i] = static_cast<int8_t>(u * 2); break;
        case DataType::kInt16: t.data<int16_t>()[i] = static_cast<int16_t>(u * 2); break;
        case DataType::kInt32: t.data<int32_t>()[i] = static_cast<int32_t>(u * 2); break;
        case DataType::kInt64: t.data<int64_t>()[i] = static_cast<int64_t>(u * 2); break;
        case DataType::kUInt8: t.data<uint8_t>()[i] = static_cast<uint8_t>(u * 2); break;
        case DataType::kUInt16: t.data<uint16_t>()[i] = static_cast<uint16_t>(u * 2); break;
        case DataType::kUInt32: t.data<uint32_t>()[i] = static_cast<uint32_t>(u * 2); break;
        case DataType::kUInt64: t.data<uint64_t>()[i] = static_cast<uint64_t>(u * 2); break;
        case DataType::kBool: t.data<bool>()[i] = u < 0.5; break;
        case DataType::kString: t.data<std::string>()[i].assign(1, 'a'); break;
        default: return not_implemented("cannot make random ", dtype_name(t.dtype()), " values for input '", m.name, "'");
      }
    }
    feeds.emplace_back(m.name, Value(std::move(t)));
  }
  return feeds;
}

namespace {

template <typename T>
void append_values(std::ostringstream& out, const Tensor& t, int count) {
  const T* p = t.data<T>();
  for (int64_t i = 0; i < t.size() && i < count; ++i) {
    if constexpr (std::is_same_v<T, std::string>) {
      out << " \"" << p[i] << "\"";
    } else if constexpr (std::is_same_v<T, int8_t> || std::is_same_v<T, uint8_t>) {
      out << " " << static_cast<int>(p[i]);
    } else {
      out << " " << static_cast<double>(p[i]);
    }
  }
  if (t.size() > count) out << " ...";
}

}  // namespace

std::string preview(const Value& value, int count) {
  std::ostringstream out;
  if (value.is_tensor()) {
    const Tensor& t = value.tensor();
    out << t.describe();
    switch (t.dtype()) {
      case DataType::kFloat: append_values<float>(out, t, count); break;
      case DataType::kDouble: append_values<double>(out, t, count); break;
      case DataType::kFloat16: append_values<Float16>(out, t, count); break;
      case DataType::kBFloat16: append_values<BFloat16>(out, t, count); break;
      case DataType::kInt8: append_values<int8_t>(out, t, count); break;
      case DataType::kInt16: append_values<int16_t>(out, t, count); break;
      case DataType::kInt32: append_values<int32_t>(out, t, count); break;
      case DataType::kInt64: append_values<int64_t>(out, t, count); break;
      case DataType::kUInt8: append_values<uint8_t>(out, t, count); break;
      case DataType::kUInt16: append_values<uint16_t>(out, t, count); break;
      case DataType::kUInt32: append_values<uint32_t>(out, t, count); break;
      case DataType::kUInt64: append_values<uint64_t>(out, t, count); break;
      case DataType::kBool: append_values<bool>(out, t, count); break;
      case DataType::kString: append_values<std::string>(out, t, count); break;
      default: break;
    }
  } else if (value.is_sequence()) {
    out << "sequence of " << value.items().size();
    if (!value.items().empty()) out << ", first: " << preview(value.items()[0], count);
  } else if (value.is_map()) {
    out << "map of " << value.map_data().keys.size();
  } else {
    out << "none";
  }
  return out.str();
}

int64_t peak_rss_bytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stoll(line.substr(6)) * 1024;
  }
  return 0;
}

}  // namespace onyx::cli

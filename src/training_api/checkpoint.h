// onyx's checkpoint file, as python/onyx/training/checkpoint.py writes it:
//
//   8 bytes  magic "ONYXCKPT"
//   4 bytes  format version (uint32 little-endian, 1)
//   4 bytes  reserved (0)
//   8 bytes  header length H (uint64)
//   H bytes  header: UTF-8 JSON
//   ...      padding to a multiple of 64, then the tensors' raw bytes, each
//            starting at a multiple of 64 from the start of the data section
//
// The tensors' element types are numpy's dtype strings ("<f4").
#pragma once

#include <cstdio>
#include <functional>
#include <string>

#include "onyx/dtype.h"
#include "onyx/status.h"
#include "onyx/training.h"

namespace onyx::training_api {

// numpy's dtype string of a type ("<f4", "|b1"); empty when numpy has none.
std::string numpy_dtype(DataType type);
// The type of a numpy dtype string; kUndefined when onyx has none.
DataType dtype_from_numpy(const std::string& dtype);

Result<training::CheckpointState> read_checkpoint(const std::string& path);
Status write_checkpoint(const training::CheckpointState& state, const std::string& path, bool include_optimizer_state);

// Writes a file through `fill` into a temporary name beside `path`, syncs it
// and renames it over `path` (then syncs the folder), so a process killed
// while writing leaves what was at `path` whole. `fill` returns false when a
// write failed.
Status replace_file(const std::string& path, const std::function<bool(std::FILE*)>& fill);

}  // namespace onyx::training_api

// Anonymous mappings that onyx allocates for large host buffers (tensors of
// 64 MiB and more, weights of 1 MiB and more copied out of a model), kept in
// a registry so that a kernel that has consumed part of a weight nothing else
// reads can hand its pages back while it packs it (discard_owned_pages).
#pragma once

#include <cstddef>

namespace onyx {

// A page-aligned, zeroed mapping of `bytes`, registered; null on failure.
void* map_owned(size_t bytes);
// Unregisters and unmaps a map_owned mapping.
void unmap_owned(void* pointer, size_t bytes);
// Drops the whole pages inside [data, data + bytes) when the range lies in a
// registered mapping (they read as zeros afterwards) and returns true; does
// nothing to other memory.
bool discard_owned_pages(const void* data, size_t bytes);

}  // namespace onyx

// Anonymous mappings that onyx allocates for large host buffers (tensors of
// 64 MiB and more, weights of 1 MiB and more copied out of a model), kept in
// a registry so that a kernel that has consumed part of a weight nothing else
// reads can hand its pages back while it packs it (discard_owned_pages); and
// the huge-page mappings that hold packed weights (map_streamed).
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

// Memory for a large buffer that every run streams through (packed weights):
// a mapping aligned to 2 MiB and advised for transparent huge pages where the
// system has them, so that reading it costs one TLB entry per 2 MiB instead of
// one per 4 KiB page. Each first write faults in a whole 2 MiB page. Not
// registered; null on failure. Freed by unmap_streamed with the same size.
void* map_streamed(size_t bytes);
void unmap_streamed(void* pointer, size_t bytes);

}  // namespace onyx

// The channel block size of onyx's blocked-channel (NCHWc) layout, as the
// com.microsoft.nchwc ops use it: 16 with AVX-512F, 8 with AVX2 and FMA, and 1
// (the layout is not used) otherwise. Kept free of other onyx headers so that
// graph passes can ask it.
#pragma once

namespace onyx::cpu {

// Decided once from cpuid and cached.
int nchwc_block_size();

}  // namespace onyx::cpu

// What the com.microsoft.nchwc Conv kernel (nchwc_conv.cc) and the fused
// pointwise-depthwise kernel (nchwc_pointwise_depthwise.cc) share: the
// grouping of output blocks, the weight packing of a regular convolution and
// the activations the tiles apply in registers. Internal to this folder.
#pragma once

#include <cstdint>
#include <cstring>

#include "providers/cpu/contrib/fused_activation.h"
#include "providers/cpu/nchwc/nchwc_kernels.h"

namespace onyx::cpu::nchwc {

// Bytes of packed weights a tile pass keeps reading while it sweeps its
// pixels: the taps of a convolution go in chunks of about this much, so that
// their weights stay in L2.
constexpr int64_t kWeightChunkBytes = 256 * 1024;

// Output blocks are computed in `groups` groups of at most F blocks whose
// sizes differ by at most one (10 blocks: 4, 3, 3, not 4, 4, 2), so that
// tasks of one group each cost about the same. Group g starts at block:
inline int64_t group_begin(int64_t g, int64_t groups, int64_t blocks) { return g * blocks / groups; }

inline int64_t group_count(int64_t blocks, int64_t max_filter_blocks) {
  return (blocks + max_filter_blocks - 1) / max_filter_blocks;
}

// Repacks W given per output block, [ob][tap][lane][B] (`tap_lanes` = taps x
// lanes floats of B), so that the nob blocks of each group that a tile
// computes read one sequential stream: [tap][lane][nob][B] per group.
inline void pack_filter_groups(const float* src, int64_t blocks, int64_t tap_lanes, int64_t B, int64_t F, float* dst) {
  const int64_t groups = group_count(blocks, F);
  for (int64_t g = 0; g < groups; ++g) {
    const int64_t ob0 = group_begin(g, groups, blocks), nob = group_begin(g + 1, groups, blocks) - ob0;
    float* group = dst + ob0 * tap_lanes * B;
    for (int64_t f = 0; f < nob; ++f) {
      const float* block = src + (ob0 + f) * tap_lanes * B;
      for (int64_t t = 0; t < tap_lanes; ++t) {
        std::memcpy(group + (t * nob + f) * B, block + t * B, static_cast<size_t>(B) * sizeof(float));
      }
    }
  }
}

// The activation as the tiles apply it before they store; false for the
// ones they do not (Sigmoid, Tanh, HardSwish, QuickGelu), which the caller
// applies afterwards.
inline bool register_activation(const FusedActivation& fused, Activation& out) {
  out = Activation{};
  out.alpha = fused.alpha;
  out.beta = fused.beta;
  switch (fused.kind) {
    case FusedActivation::Kind::kNone:
      return true;
    case FusedActivation::Kind::kRelu:
      out.kind = Activation::kRelu;
      return true;
    case FusedActivation::Kind::kLeakyRelu:
      out.kind = Activation::kLeakyRelu;
      return true;
    case FusedActivation::Kind::kClip:
      out.kind = Activation::kClip;
      return true;
    case FusedActivation::Kind::kHardSigmoid:
      out.kind = Activation::kHardSigmoid;
      return true;
    default:
      return false;
  }
}

}  // namespace onyx::cpu::nchwc

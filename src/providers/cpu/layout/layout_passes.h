// The CPU provider's layout passes (ORT_ENABLE_LAYOUT and above), run after
// partitioning on the nodes the CPU owns: float convolution chains into the
// blocked-channel layout NCHWc, then large 1x1 expansions fused with the
// depthwise convolution that reads them, then uint8 QLinearConv chains into
// channels-last.
#pragma once

#include <memory>

#include "model/onnx_proto.h"
#include "optimizer/pass.h"

namespace onyx::cpu {

// Whether two values have the same static shape: equal known dims, and
// unknown dims named by one symbol.
inline bool same_dims(const graph::TypeAndShape& a, const graph::TypeAndShape& b) {
  if (!a.has_shape || !b.has_shape || a.shape.size() != b.shape.size()) return false;
  for (size_t i = 0; i < a.shape.size(); ++i) {
    const graph::Dim& x = a.shape[i];
    const graph::Dim& y = b.shape[i];
    if (x.is_known() != y.is_known()) return false;
    if (x.is_known() ? x.value != y.value : (x.symbol.empty() || x.symbol != y.symbol)) return false;
  }
  return true;
}

std::unique_ptr<optimizer::Pass> make_nchwc_transformer_pass();
std::unique_ptr<optimizer::Pass> make_nchwc_pointwise_depthwise_fusion_pass();
// uint8 QLinearConv chains to channels-last (com.microsoft QLinearConv with
// channels_last, NhwcMaxPool), as onnxruntime's NHWC transformer.
std::unique_ptr<optimizer::Pass> make_qlinear_nhwc_transformer_pass();

// For a saved optimized model: writes the nodes only onyx runs (com.onyx.nchwc
// fusions) as the com.microsoft.nchwc ops they were made of, and the
// activations onnxruntime's fused ops lack (HardSwish, QuickGelu in a
// FusedConv, FusedGemm or NCHWc Conv) as nodes of their own, so that the
// file runs in onnxruntime too. Subgraphs included.
void split_onyx_only_nodes(model::ModelProto& model);

// The weights of a blocked (com.microsoft.nchwc) convolution are laid out
// for one block size: 16 channels on AVX-512, 8 on AVX2. A saved optimized
// model that imports that domain records this CPU's block size in its
// metadata (kNchwcBlockKey), and a model that records another one is refused
// where the block differs, instead of running with misread weights.
inline constexpr const char* kNchwcBlockKey = "onyx.nchwc_block";
void record_nchwc_block(model::ModelProto& model);
Status check_nchwc_block(const model::ModelProto& model);

}  // namespace onyx::cpu

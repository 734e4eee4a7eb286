// The CPU provider's layout passes (ORT_ENABLE_LAYOUT and above), run after
// partitioning on the nodes the CPU owns: float convolution chains into the
// blocked-channel layout NCHWc, then large 1x1 expansions fused with the
// depthwise convolution that reads them.
#pragma once

#include <memory>

#include "model/onnx_proto.h"
#include "optimizer/pass.h"

namespace onyx::cpu {

std::unique_ptr<optimizer::Pass> make_nchwc_transformer_pass();
std::unique_ptr<optimizer::Pass> make_nchwc_pointwise_depthwise_fusion_pass();

// For a saved optimized model: writes the nodes only onyx runs (com.onyx.nchwc
// fusions) as the com.microsoft.nchwc ops they were made of, so that the file
// runs in onnxruntime too. Subgraphs included.
void split_onyx_only_nodes(model::ModelProto& model);

}  // namespace onyx::cpu

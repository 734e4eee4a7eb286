// DequantizeLinear -> QuantizeLinear with the same type, scale and zero
// point gives back the quantized tensor: (q - zp) * s / s rounds to q - zp
// exactly for 8-bit q and a normal positive s, so the Q's readers read the
// DQ's input (what QDQ fusions leave between two quantized ops).
#include "optimizer/extended/qdq_util.h"

namespace onyx::optimizer {
namespace {

using qdq::QuantParams;

class DequantizeQuantizeElimination final : public Pass {
 public:
  std::string name() const override { return "dequantize_quantize_elimination"; }

  std::optional<Patch> match(const PassContext& ctx, size_t index) override {
    if (!ctx.options().qdq_fusions) return std::nullopt;
    std::optional<QuantParams> y = qdq::quantize_params(ctx, index);
    if (!y || ctx.is_pinned(y->data)) return std::nullopt;
    std::optional<QuantParams> x = qdq::dequantize_8bit(ctx, ctx.node(index).inputs[0], false);
    if (!x || !qdq::same_quantization(*x, *y)) return std::nullopt;
    Patch patch;
    patch.remove(index);
    patch.replace(y->data, x->data);
    return patch;
  }
};

}  // namespace

std::unique_ptr<Pass> make_dequantize_quantize_elimination_pass() {
  return std::make_unique<DequantizeQuantizeElimination>();
}

}  // namespace onyx::optimizer

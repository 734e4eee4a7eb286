// Attribute parsing and weight packing shared by the RNN, GRU and LSTM kernels.
#include "providers/cpu/rnn/rnn_util.h"

namespace onyx::cpu::rnn {
namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

struct ActivationSpec {
  const char* name;
  ActivationKind kind;
  bool takes_alpha, takes_beta;
  float default_alpha, default_beta;
};

// Defaults are those of the ONNX operators of the same name (Affine and
// ScaledTanh, once experimental ops, default to the identity-like 1 and 0/1).
constexpr ActivationSpec kSpecs[] = {
    {"relu", ActivationKind::kRelu, false, false, 0.0f, 0.0f},
    {"tanh", ActivationKind::kTanh, false, false, 0.0f, 0.0f},
    {"sigmoid", ActivationKind::kSigmoid, false, false, 0.0f, 0.0f},
    {"affine", ActivationKind::kAffine, true, true, 1.0f, 0.0f},
    {"leakyrelu", ActivationKind::kLeakyRelu, true, false, 0.01f, 0.0f},
    {"thresholdedrelu", ActivationKind::kThresholdedRelu, true, false, 1.0f, 0.0f},
    {"scaledtanh", ActivationKind::kScaledTanh, true, true, 1.0f, 1.0f},
    {"hardsigmoid", ActivationKind::kHardSigmoid, true, true, 0.2f, 0.5f},
    {"elu", ActivationKind::kElu, true, false, 1.0f, 0.0f},
    {"softsign", ActivationKind::kSoftsign, false, false, 0.0f, 0.0f},
    {"softplus", ActivationKind::kSoftplus, false, false, 0.0f, 0.0f},
};

}  // namespace

std::vector<Activation> parse_activations(const KernelInfo& info, int per_direction, int64_t num_directions,
                                          const std::vector<std::string>& defaults) {
  std::vector<std::string> names = info.attr_strings("activations");
  if (names.empty()) {
    for (int64_t d = 0; d < num_directions; ++d) names.insert(names.end(), defaults.begin(), defaults.end());
  } else if (static_cast<int64_t>(names.size()) == per_direction && num_directions == 2) {
    const std::vector<std::string> once = names;
    names.insert(names.end(), once.begin(), once.end());
  }
  if (static_cast<int64_t>(names.size()) != per_direction * num_directions) {
    throw Error(invalid_model(info.label(), ": attribute activations has ", names.size(), " entries, expected ",
                              per_direction * num_directions, " (", per_direction, " per direction)"));
  }
  const std::vector<float> alphas = info.attr_floats("activation_alpha");
  const std::vector<float> betas = info.attr_floats("activation_beta");
  size_t next_alpha = 0, next_beta = 0;
  std::vector<Activation> result;
  for (const std::string& name : names) {
    const std::string key = lower(name);
    const ActivationSpec* spec = nullptr;
    for (const ActivationSpec& s : kSpecs) {
      if (key == s.name) spec = &s;
    }
    if (spec == nullptr) {
      throw Error(invalid_model(info.label(), ": activation '", name,
                                "' is not one of Relu, Tanh, Sigmoid, Affine, LeakyRelu, ThresholdedRelu, ScaledTanh, "
                                "HardSigmoid, Elu, Softsign, Softplus"));
    }
    Activation a;
    a.kind = spec->kind;
    a.alpha = spec->default_alpha;
    a.beta = spec->default_beta;
    if (spec->takes_alpha && next_alpha < alphas.size()) a.alpha = alphas[next_alpha++];
    if (spec->takes_beta && next_beta < betas.size()) a.beta = betas[next_beta++];
    result.push_back(a);
  }
  return result;
}

int64_t parse_direction(const KernelInfo& info, bool* reverse_only) {
  const std::string direction = info.attr_string("direction", "forward");
  *reverse_only = direction == "reverse";
  if (direction == "forward" || direction == "reverse") return 1;
  if (direction == "bidirectional") return 2;
  throw Error(invalid_model(info.label(), ": attribute direction is '", direction, "', expected forward, reverse or bidirectional"));
}

PackedWeights pack_weights(const float* w, const float* r, int64_t num_directions, int64_t gates, int64_t hidden,
                           int64_t input_size, const std::vector<int64_t>& block_gates) {
  PackedWeights packed;
  packed.blocks = static_cast<int64_t>(block_gates.size());
  const int64_t rows = gates * hidden;
  for (int64_t d = 0; d < num_directions; ++d) {
    // op(B) = W_d^T (input_size x rows); nothing to pack without inputs.
    packed.w.push_back(input_size > 0 ? pack_b(true, input_size, rows, w + d * rows * input_size, input_size)
                                      : PackedMatrix());
    const float* r_d = r + d * rows * hidden;
    for (int64_t block : block_gates) {
      packed.r.push_back(pack_b(true, hidden, block * hidden, r_d, hidden));
      r_d += block * hidden * hidden;
    }
  }
  return packed;
}

PackedWeights pack_constant_weights(const KernelInfo& info, int64_t gates, int64_t num_directions,
                                    const std::vector<int64_t>& block_gates) {
  const Tensor* w = info.constant_input(1);
  const Tensor* r = info.constant_input(2);
  auto packable = [](const Tensor* t) {
    return t != nullptr && t->rank() == 3 &&
           (t->dtype() == DataType::kFloat || t->dtype() == DataType::kFloat16 || t->dtype() == DataType::kBFloat16);
  };
  if (!packable(w) || !packable(r) || w->dtype() != r->dtype()) return {};
  // Shapes as compute() checks them against X: W [D, G*H, I], R [D, G*H, H].
  const int64_t hidden = r->dim(2);
  const int64_t hidden_attr = info.attr_int("hidden_size", 0);
  if (hidden <= 0 || (hidden_attr > 0 && hidden_attr != hidden)) return {};
  if (r->dim(0) != num_directions || r->dim(1) != gates * hidden) return {};
  if (w->dim(0) != num_directions || w->dim(1) != gates * hidden) return {};
  std::vector<float> w_values, r_values;
  load_as(*w, w_values);
  load_as(*r, r_values);
  return pack_weights(w_values.data(), r_values.data(), num_directions, gates, hidden, w->dim(2), block_gates);
}

}  // namespace onyx::cpu::rnn

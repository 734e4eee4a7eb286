// NonMaxSuppression: greedy selection per (batch, class) of the highest-scoring
// boxes, dropping any whose IoU with a kept box is above iou_threshold.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "providers/kernel.h"

namespace onyx::cpu {
namespace {

struct Box {
  float y1, x1, y2, x2;
};

class NonMaxSuppressionKernel final : public Kernel {
 public:
  explicit NonMaxSuppressionKernel(const KernelInfo& info) : center_point_box_(info.attr_int("center_point_box", 0)) {
    if (center_point_box_ != 0 && center_point_box_ != 1) {
      throw Error(invalid_model(info.label(), ": attribute center_point_box is ", center_point_box_, ", expected 0 or 1"));
    }
  }

  Status compute(KernelContext& ctx) const override {
    const Tensor* boxes = ctx.input_tensor(0);
    const Tensor* scores = ctx.input_tensor(1);
    if (boxes == nullptr || boxes->rank() != 3 || boxes->dim(2) != 4 || boxes->dtype() != DataType::kFloat) {
      return invalid_argument(ctx.label(), ": input boxes is ", boxes ? boxes->describe() : std::string("missing"),
                              ", expected float[num_batches, spatial_dimension, 4]");
    }
    if (scores == nullptr || scores->rank() != 3 || scores->dtype() != DataType::kFloat ||
        scores->dim(0) != boxes->dim(0) || scores->dim(2) != boxes->dim(1)) {
      return invalid_argument(ctx.label(), ": input scores is ", scores ? scores->describe() : std::string("missing"),
                              ", expected float[", boxes->dim(0), ", num_classes, ", boxes->dim(1), "]");
    }
    int64_t max_out = 0;
    float iou_threshold = 0.0f;
    bool has_score_threshold = false;
    float score_threshold = 0.0f;
    if (const Tensor* t = ctx.input_tensor(2); t != nullptr && t->size() > 0) {
      if (t->dtype() != DataType::kInt64) return invalid_argument(ctx.label(), ": input max_output_boxes_per_class must be int64");
      max_out = t->data<int64_t>()[0];
    }
    if (const Tensor* t = ctx.input_tensor(3); t != nullptr && t->size() > 0) {
      if (t->dtype() != DataType::kFloat) return invalid_argument(ctx.label(), ": input iou_threshold must be float");
      iou_threshold = t->data<float>()[0];
    }
    if (const Tensor* t = ctx.input_tensor(4); t != nullptr && t->size() > 0) {
      if (t->dtype() != DataType::kFloat) return invalid_argument(ctx.label(), ": input score_threshold must be float");
      has_score_threshold = true;
      score_threshold = t->data<float>()[0];
    }
    const int64_t batches = boxes->dim(0), n = boxes->dim(1), classes = scores->dim(1);
    std::vector<int64_t> selected;  // triples
    if (max_out > 0) {
      std::vector<Box> corner(static_cast<size_t>(n));
      for (int64_t b = 0; b < batches; ++b) {
        const float* pb = boxes->data<float>() + b * n * 4;
        for (int64_t i = 0; i < n; ++i) {
          const float* q = pb + i * 4;
          Box box;
          if (center_point_box_) {
            box = {q[1] - q[3] / 2, q[0] - q[2] / 2, q[1] + q[3] / 2, q[0] + q[2] / 2};
          } else {
            box = {std::min(q[0], q[2]), std::min(q[1], q[3]), std::max(q[0], q[2]), std::max(q[1], q[3])};
          }
          corner[static_cast<size_t>(i)] = box;
        }
        for (int64_t c = 0; c < classes; ++c) {
          const float* ps = scores->data<float>() + (b * classes + c) * n;
          std::vector<int64_t> order;
          for (int64_t i = 0; i < n; ++i) {
            if (!has_score_threshold || ps[i] > score_threshold) order.push_back(i);
          }
          std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t z) { return ps[a] > ps[z]; });
          std::vector<int64_t> kept;
          for (int64_t i : order) {
            if (static_cast<int64_t>(kept.size()) >= max_out) break;
            bool keep = true;
            for (int64_t k : kept) {
              if (iou(corner[static_cast<size_t>(i)], corner[static_cast<size_t>(k)]) > iou_threshold) {
                keep = false;
                break;
              }
            }
            if (keep) {
              kept.push_back(i);
              selected.insert(selected.end(), {b, c, i});
            }
          }
        }
      }
    }
    Tensor& y = ctx.allocate_output(0, DataType::kInt64, {static_cast<int64_t>(selected.size() / 3), 3});
    std::copy(selected.begin(), selected.end(), y.data<int64_t>());
    return Status::ok();
  }

 private:
  static float iou(const Box& a, const Box& b) {
    const float ih = std::min(a.y2, b.y2) - std::max(a.y1, b.y1);
    const float iw = std::min(a.x2, b.x2) - std::max(a.x1, b.x1);
    if (ih <= 0 || iw <= 0) return 0.0f;
    const float inter = ih * iw;
    const float uni = (a.y2 - a.y1) * (a.x2 - a.x1) + (b.y2 - b.y1) * (b.x2 - b.x1) - inter;
    return uni > 0 ? inter / uni : 0.0f;
  }

  int64_t center_point_box_;
};

ONYX_REGISTER_CPU_KERNEL("", "NonMaxSuppression", 10, 10, {DataType::kFloat}, NonMaxSuppressionKernel);
ONYX_REGISTER_CPU_KERNEL("", "NonMaxSuppression", 11, kLatestVersion, {DataType::kFloat}, NonMaxSuppressionKernel);

}  // namespace
}  // namespace onyx::cpu

#pragma once
// Feature Pyramid Network over a bottom-up backbone, as Detectron2's FPN: lateral 1x1 and output
// 3x3 convs named fpn_lateral{s} / fpn_output{s} (s = log2 of the input stride), top-down sum
// (or average) with nearest 2x upsampling, and a top block: P6 by max-pooling P5
// (LastLevelMaxPool, the R-CNNs') or P6/P7 by two stride-2 3x3 convs from res5 or P5
// (LastLevelP6P7, RetinaNet's; named top_block.p6 / top_block.p7).
#include <memory>
#include <vector>

#include "detkit/layers/conv2d.h"
#include "detkit/modeling/backbone/backbone.h"

namespace detkit::modeling {

struct FPNOptions {
  TORCH_ARG(std::vector<std::string>, in_features);  // e.g. res2..res5, increasing stride
  TORCH_ARG(int64_t, out_channels) = 256;
  TORCH_ARG(std::string, norm) = "";
  TORCH_ARG(std::string, fuse_type) = "sum";  // or "avg"
  /// "max_pool": p{last+1} from p{last}; "p6p7": p{last+1}, p{last+2} from
  /// top_block_in_feature; "": none.
  TORCH_ARG(std::string, top_block) = "max_pool";
  /// For "p6p7": a bottom-up feature ("res5") or an FPN output ("p5").
  TORCH_ARG(std::string, top_block_in_feature) = "res5";
};

FPNOptions fpn_options_from_config(const config::CfgNode& cfg);

class FPN : public Backbone {
 public:
  FPN(std::shared_ptr<Backbone> bottom_up, const FPNOptions& options);
  FeatureMap forward(const at::Tensor& images) override;
  layers::ShapeSpecs output_shape() const override { return shapes_; }
  int64_t size_divisibility() const override { return size_divisibility_; }
  const std::shared_ptr<Backbone>& bottom_up() const { return bottom_up_; }

 private:
  std::shared_ptr<Backbone> bottom_up_;
  FPNOptions options_;
  std::vector<layers::Conv2d> lateral_convs_, output_convs_;  // in in_features order
  layers::Conv2d p6_{nullptr}, p7_{nullptr};                  // LastLevelP6P7
  std::vector<std::string> out_names_;                        // p2, p3, ... (and p6)
  layers::ShapeSpecs shapes_;
  int64_t size_divisibility_ = 0;
};

}  // namespace detkit::modeling

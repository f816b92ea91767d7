#pragma once
// FastRCNNConvFCHead: pooled box features -> convs (conv1..) -> flatten -> FCs (fc1..), each
// with ReLU, as Detectron2's (Base-RCNN-FPN: two FCs of 1024). Built by MODEL.ROI_BOX_HEAD.NAME.
#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>

#include <functional>
#include <memory>
#include <vector>

#include "detkit/config/cfg_node.h"
#include "detkit/layers/conv2d.h"
#include "detkit/utils/registry.h"

namespace detkit::modeling {

struct BoxHeadInput {
  int64_t channels = 0, height = 0, width = 0;
};

class BoxHead : public torch::nn::Module {
 public:
  /// x: (R, C, H, W) pooled features -> (R, output_size()) or (R, C', H, W) without FCs.
  virtual at::Tensor forward(const at::Tensor& x) = 0;
  /// Width of the flattened output.
  virtual int64_t output_size() const = 0;
};

struct FastRCNNConvFCHeadOptions {
  BoxHeadInput input;
  std::vector<int64_t> conv_dims;  // NUM_CONV x CONV_DIM
  std::vector<int64_t> fc_dims;    // NUM_FC x FC_DIM
  std::string norm;
};

class FastRCNNConvFCHead : public BoxHead {
 public:
  explicit FastRCNNConvFCHead(const FastRCNNConvFCHeadOptions& options);
  at::Tensor forward(const at::Tensor& x) override;
  int64_t output_size() const override { return output_size_; }

 private:
  std::vector<layers::Conv2d> convs_;
  std::vector<torch::nn::Linear> fcs_;
  int64_t output_size_;
};

using BoxHeadFactory =
    std::function<std::shared_ptr<BoxHead>(const config::CfgNode& cfg, const BoxHeadInput& input)>;
Registry<BoxHeadFactory>& box_head_registry();

#define DETKIT_REGISTER_BOX_HEAD(name, ...) \
  DETKIT_REGISTER(::detkit::modeling::box_head_registry(), #name, __VA_ARGS__)

std::shared_ptr<BoxHead> build_box_head(const config::CfgNode& cfg, const BoxHeadInput& input);

/// Caffe2's "Xavier" fill for a Linear layer (kaiming uniform, a = 1; bias 0).
void c2_xavier_fill(torch::nn::Linear& fc);

}  // namespace detkit::modeling

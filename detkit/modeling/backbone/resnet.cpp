#include "detkit/modeling/backbone/resnet.h"

#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>

#include "detkit/layers/conv2d.h"
#include "detkit/utils/error.h"

namespace detkit::modeling {

namespace {

std::vector<int64_t> blocks_per_stage(int64_t depth) {
  switch (depth) {
    case 18: return {2, 2, 2, 2};
    case 34: return {3, 4, 6, 3};
    case 50: return {3, 4, 6, 3};
    case 101: return {3, 4, 23, 3};
    case 152: return {3, 8, 36, 3};
  }
  throw Error("MODEL.RESNETS.DEPTH must be 18, 34, 50, 101 or 152, got " + std::to_string(depth));
}

// Frozen stages keep their BatchNorm statistics: BN there is FrozenBN, as Detectron2 converts it.
std::string norm_for(const std::string& norm, bool frozen) {
  const bool batch_norm =
      norm == "BN" || norm == "SyncBN" || norm == "naiveSyncBN" || norm == "naiveSyncBN_N";
  return frozen && batch_norm ? "FrozenBN" : norm;
}

void freeze(torch::nn::Module& module) {
  for (auto& p : module.parameters()) p.set_requires_grad(false);
}

}  // namespace

ResNetOptions resnet_options_from_config(const config::CfgNode& cfg, int64_t in_channels) {
  return ResNetOptions()
      .depth(cfg.get_int("MODEL.RESNETS.DEPTH"))
      .in_channels(in_channels)
      .stem_out_channels(cfg.get_int("MODEL.RESNETS.STEM_OUT_CHANNELS"))
      .res2_out_channels(cfg.get_int("MODEL.RESNETS.RES2_OUT_CHANNELS"))
      .num_groups(cfg.get_int("MODEL.RESNETS.NUM_GROUPS"))
      .width_per_group(cfg.get_int("MODEL.RESNETS.WIDTH_PER_GROUP"))
      .stride_in_1x1(cfg.get_bool("MODEL.RESNETS.STRIDE_IN_1X1"))
      .res5_dilation(cfg.get_int("MODEL.RESNETS.RES5_DILATION"))
      .norm(cfg.get_string("MODEL.RESNETS.NORM"))
      .freeze_at(cfg.get_int("MODEL.BACKBONE.FREEZE_AT"))
      .out_features(cfg.get_string_list("MODEL.RESNETS.OUT_FEATURES"))
      .deform_on_per_stage(deform_on_per_stage(cfg))
      .deform_modulated(cfg.get_bool("MODEL.RESNETS.DEFORM_MODULATED"))
      .deform_num_groups(cfg.get_int("MODEL.RESNETS.DEFORM_NUM_GROUPS"));
}

std::vector<bool> deform_on_per_stage(const config::CfgNode& cfg) {
  const config::CfgValue& value = cfg.get("MODEL.RESNETS.DEFORM_ON_PER_STAGE");
  std::vector<bool> out;
  if (value.kind() == config::CfgValue::Kind::List) {
    for (const auto& item : value.as_list())
      if (item.kind() == config::CfgValue::Kind::Bool) out.push_back(item.as_bool());
  }
  if (out.size() != 4 ||
      (value.kind() == config::CfgValue::Kind::List && value.as_list().size() != 4))
    throw Error("MODEL.RESNETS.DEFORM_ON_PER_STAGE must be 4 booleans (res2..res5), got " +
                value.repr());
  return out;
}

ResNet::ResNet(const ResNetOptions& o) : options_(o) {
  const bool basic = o.depth() < 50;
  if (basic && o.res2_out_channels() != 64)
    throw Error("MODEL.RESNETS.RES2_OUT_CHANNELS must be 64 for ResNet-18/34, got " +
                std::to_string(o.res2_out_channels()));
  if (basic && o.res5_dilation() != 1)
    throw Error("MODEL.RESNETS.RES5_DILATION must be 1 for ResNet-18/34");
  const auto& deform = o.deform_on_per_stage();
  if (deform.size() != 4)
    throw Error("MODEL.RESNETS.DEFORM_ON_PER_STAGE must have 4 entries (res2..res5)");
  if (basic && std::find(deform.begin(), deform.end(), true) != deform.end())
    throw Error(
        "MODEL.RESNETS.DEFORM_ON_PER_STAGE is not supported for ResNet-18/34 (as in "
        "Detectron2: its basic blocks have no deformable form)");
  if (o.deform_num_groups() < 1)
    throw Error("MODEL.RESNETS.DEFORM_NUM_GROUPS must be at least 1, got " +
                std::to_string(o.deform_num_groups()));
  if (o.res5_dilation() != 1 && o.res5_dilation() != 2)
    throw Error("MODEL.RESNETS.RES5_DILATION must be 1 or 2, got " + std::to_string(o.res5_dilation()));
  const std::vector<std::string> known = {"stem", "res2", "res3", "res4", "res5"};
  int64_t num_stages = 0;
  for (const auto& f : o.out_features()) {
    auto it = std::find(known.begin(), known.end(), f);
    if (it == known.end())
      throw Error("MODEL.RESNETS.OUT_FEATURES: unknown feature '" + f + "' (stem, res2..res5)");
    num_stages = std::max<int64_t>(num_stages, it - known.begin());
  }

  stem_ = register_module("stem", BasicStem(o.in_channels(), o.stem_out_channels(),
                                             norm_for(o.norm(), o.freeze_at() >= 1)));
  if (o.freeze_at() >= 1) freeze(*stem_);
  shapes_["stem"] = {o.stem_out_channels(), 4};

  auto blocks = blocks_per_stage(o.depth());
  int64_t in_channels = o.stem_out_channels(), out_channels = o.res2_out_channels();
  int64_t bottleneck = o.num_groups() * o.width_per_group(), stride = 4;
  for (int64_t idx = 0; idx < num_stages; ++idx) {
    const int64_t stage = idx + 2;
    const bool frozen = o.freeze_at() >= stage;
    const int64_t dilation = stage == 5 ? o.res5_dilation() : 1;
    const int64_t first_stride = (idx == 0 || (stage == 5 && dilation == 2)) ? 1 : 2;
    torch::nn::Sequential seq;
    for (int64_t b = 0; b < blocks[idx]; ++b) {
      BlockOptions bo;
      bo.in_channels = b == 0 ? in_channels : out_channels;
      bo.out_channels = out_channels;
      bo.stride = b == 0 ? first_stride : 1;
      bo.bottleneck_channels = bottleneck;
      bo.num_groups = o.num_groups();
      bo.dilation = dilation;
      bo.stride_in_1x1 = o.stride_in_1x1();
      bo.norm = norm_for(o.norm(), frozen);
      bo.deform_modulated = o.deform_modulated();
      bo.deform_num_groups = o.deform_num_groups();
      if (basic) seq->push_back(BasicBlock(bo));
      else if (deform[idx])
        seq->push_back(DeformBottleneckBlock(bo));
      else seq->push_back(BottleneckBlock(bo));
    }
    std::string name = "res" + std::to_string(stage);
    register_module(name, seq);
    if (frozen) freeze(*seq);
    stride *= first_stride;
    shapes_[name] = {out_channels, stride};
    stage_names_.push_back(name);
    stages_.push_back(seq);
    in_channels = out_channels;
    out_channels *= 2;
    bottleneck *= 2;
  }
}

FeatureMap ResNet::forward(const at::Tensor& images) {
  TORCH_CHECK(images.dim() == 4 && images.size(1) == options_.in_channels(), "ResNet needs (N, ",
              options_.in_channels(), ", H, W) input, got ", images.sizes());
  FeatureMap out;
  const auto& wanted = options_.out_features();
  auto keep = [&](const std::string& name, const at::Tensor& x) {
    if (std::find(wanted.begin(), wanted.end(), name) != wanted.end()) out[name] = x;
  };
  at::Tensor x = stem_->forward(
      channels_last_maps(images) ? images.contiguous(at::MemoryFormat::ChannelsLast) : images);
  keep("stem", x);
  for (size_t i = 0; i < stages_.size(); ++i) {
    x = stages_[i]->forward(x);
    keep(stage_names_[i], x);
  }
  return out;
}

bool ResNet::channels_last_maps(const at::Tensor& images) const {
  return layers::conv_algorithm() == layers::ConvAlgorithm::kAuto && !is_training() &&
         images.device().is_cpu() && options_.norm() != "GN" &&
         images.scalar_type() == at::kFloat && !at::autocast::is_autocast_enabled(at::kCPU);
}

layers::ShapeSpecs ResNet::output_shape() const {
  layers::ShapeSpecs out;
  for (const auto& f : options_.out_features()) out[f] = shapes_.at(f);
  return out;
}

DETKIT_REGISTER_BACKBONE(build_resnet_backbone, [](const config::CfgNode& cfg, int64_t in_channels) {
  return std::make_shared<ResNet>(resnet_options_from_config(cfg, in_channels));
});

}  // namespace detkit::modeling

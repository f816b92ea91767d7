#include "detkit/export/export_plan.h"

#include <ATen/ATen.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <variant>

#include "detkit/layers/conv2d.h"
#include "detkit/modeling/anchor_generator.h"
#include "detkit/modeling/box_regression.h"
#include "detkit/modeling/roi_heads/poolers.h"
#include "detkit/utils/error.h"

namespace detkit::export_ {
namespace {

// What can be exported, by config key: the value the model has, and the values that have an
// exported form.
void require(const config::CfgNode& cfg, const std::string& key,
             const std::vector<std::string>& supported) {
  const std::string value = cfg.get_string(key);
  if (std::find(supported.begin(), supported.end(), value) != supported.end()) return;
  std::string list;
  for (const auto& s : supported) list += (list.empty() ? "" : ", ") + s;
  throw Error("export: " + key + " '" + value + "' has no exported form in detkit (exported: " +
              list + ")");
}

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

// The model's layers, by state-dict prefix, in registration order.
struct Layers {
  std::vector<std::string> convs, linears;

  std::vector<std::string> convs_under(const std::string& prefix) const { return under(convs, prefix); }
  std::vector<std::string> linears_under(const std::string& prefix) const {
    return under(linears, prefix);
  }

 private:
  static std::vector<std::string> under(const std::vector<std::string>& names,
                                        const std::string& prefix) {
    std::vector<std::string> out;
    for (const auto& name : names)
      if (starts_with(name, prefix)) out.push_back(name);
    return out;
  }
};

Layers collect_layers(torch::nn::Module& model, ExportPlan& plan) {
  Layers layers;
  std::set<std::string> known;  // modules whose tensors the exported model reads
  for (const auto& item : model.named_modules("", /*include_self=*/false)) {
    const std::string& name = item.key();
    torch::nn::Module* m = item.value().get();
    if (auto* conv = dynamic_cast<layers::Conv2dImpl*>(m)) {
      const auto& o = conv->options();
      layers.convs.push_back(name);
      plan.convs[name] = {o.stride(), o.padding(), o.dilation(), o.groups(), o.relu(), o.norm(), false};
      known.insert(name);
      if (!o.norm().empty()) known.insert(name + ".norm");
    } else if (auto* deconv = dynamic_cast<torch::nn::ConvTranspose2dImpl*>(m)) {
      const auto& o = deconv->options;
      const auto* padding = std::get_if<torch::ExpandingArray<2>>(&o.padding());
      const bool plain = padding != nullptr && (*padding)->at(0) == (*padding)->at(1) &&
                         o.stride()->at(0) == o.stride()->at(1) && o.groups() == 1 &&
                         o.output_padding()->at(0) == 0 && o.output_padding()->at(1) == 0 &&
                         o.dilation()->at(0) == 1 && o.dilation()->at(1) == 1 && o.bias();
      if (!plain)
        throw Error("export: the transposed convolution " + name +
                    " has settings the exported model does not handle (square stride and "
                    "padding, one group, no dilation or output padding, a bias)");
      layers.convs.push_back(name);
      plan.convs[name] = {o.stride()->at(0), (*padding)->at(0), 1, 1, false, "", true};
      known.insert(name);
    } else if (dynamic_cast<torch::nn::LinearImpl*>(m) != nullptr) {
      layers.linears.push_back(name);
      known.insert(name);
    }
  }
  // Every tensor must belong to a layer the exported model runs: anything else would be skipped.
  auto add = [&](const std::string& tensor_name, const at::Tensor& t) {
    const std::string owner = tensor_name.substr(0, tensor_name.rfind('.'));
    if (!known.count(owner))
      throw Error("export: " + tensor_name + " belongs to a layer without an exported form (" +
                  owner + ")");
    plan.weights[tensor_name] = t.detach().to(at::kCPU).clone();
  };
  for (const auto& p : model.named_parameters()) add(p.key(), p.value().to(at::kFloat));
  for (const auto& b : model.named_buffers()) add(b.key(), b.value());
  return layers;
}

// "p4" -> 16: an FPN level's stride (detkit's and Detectron2's FPN name levels by log2(stride)).
int64_t level_stride(const std::string& feature) {
  if (feature.size() < 2 || feature[0] != 'p')
    throw Error("export: feature '" + feature + "' is not an FPN level (p2 .. p7)");
  return int64_t{1} << std::stoll(feature.substr(1));
}

std::vector<double> four(const std::array<double, 4>& a) { return {a.begin(), a.end()}; }

void plan_backbone(ExportPlan& plan, const Layers& layers, const config::CfgNode& cfg) {
  const std::string bottom = "backbone.bottom_up.";
  plan.resnet_stem = bottom + "stem.conv1";
  for (int stage = 2; stage <= 5; ++stage) {
    const std::string name = "res" + std::to_string(stage);
    std::set<std::string> indices;
    for (const auto& conv : layers.convs_under(bottom + name + ".")) {
      const std::string rest = conv.substr(bottom.size() + name.size() + 1);
      indices.insert(rest.substr(0, rest.find('.')));
    }
    if (indices.empty()) break;
    plan.resnet_stages.push_back(bottom + name);
    plan.resnet_stage_names.push_back(name);
    plan.resnet_blocks.push_back(static_cast<int64_t>(indices.size()));
  }
  plan.fpn_lateral = layers.convs_under("backbone.fpn_lateral");
  for (const auto& lateral : plan.fpn_lateral) {
    const std::string stage = lateral.substr(std::string("backbone.fpn_lateral").size());
    plan.fpn_output.push_back("backbone.fpn_output" + stage);
    plan.fpn_out.push_back("p" + stage);
  }
  const std::string name = cfg.get_string("MODEL.BACKBONE.NAME");
  plan.fpn_top_block = name == "build_resnet_fpn_backbone" ? "max_pool" : "p6p7";
  const int64_t last = std::stoll(plan.fpn_out.back().substr(1));
  plan.fpn_out.push_back("p" + std::to_string(last + 1));
  if (plan.fpn_top_block == "p6p7") plan.fpn_out.push_back("p" + std::to_string(last + 2));
  plan.fpn_in = cfg.get_string_list("MODEL.FPN.IN_FEATURES");
  plan.fpn_fuse_avg = cfg.get_string("MODEL.FPN.FUSE_TYPE") == "avg";
  plan.fpn_top_in = name == "build_retinanet_resnet_fpn_p5_backbone" ? "p5" : "res5";
  // Padding to a multiple of the coarsest input level's stride, as the model's ImageList.
  plan.size_divisibility = int64_t{1} << std::stoll(plan.fpn_in.back().substr(3));
}

void plan_anchors(ExportPlan& plan, torch::nn::Module& model, const std::string& name) {
  const auto modules = model.named_modules("", false);
  const auto* generator =
      modules.contains(name) ? dynamic_cast<modeling::DefaultAnchorGeneratorImpl*>(modules[name].get())
                             : nullptr;
  if (generator == nullptr) throw Error("export: the model has no DefaultAnchorGenerator at " + name);
  for (const auto& c : generator->cell_anchors()) plan.cell_anchors.push_back(c.to(at::kCPU).clone());
  plan.anchor_strides = generator->options.strides();
  plan.anchor_offset = generator->options.offset();
}

PoolerSpec pooler_of(const config::CfgNode& cfg, const std::string& head,
                     const std::vector<int64_t>& strides) {
  const modeling::ROIPoolerOptions o = modeling::pooler_options_from_config(cfg, head, strides);
  if (o.pooler_type != "ROIAlign" && o.pooler_type != "ROIAlignV2")
    throw Error("export: MODEL." + head + ".POOLER_TYPE '" + o.pooler_type +
                "' has no exported form (exported: ROIAlign, ROIAlignV2)");
  return {o.output_size, o.sampling_ratio, o.pooler_type == "ROIAlignV2"};
}

void plan_rcnn(ExportPlan& plan, const Layers& layers, torch::nn::Module& model,
               const config::CfgNode& cfg) {
  plan_anchors(plan, model, "proposal_generator.anchor_generator");
  plan.rpn_in = cfg.get_string_list("MODEL.RPN.IN_FEATURES");
  plan.rpn_convs = layers.convs_under("proposal_generator.rpn_head.conv");
  plan.rpn_weights = four(modeling::box_reg_weights_from_config(cfg, "MODEL.RPN.BBOX_REG_WEIGHTS"));
  plan.rpn_pre_topk = cfg.get_int("MODEL.RPN.PRE_NMS_TOPK_TEST");
  plan.rpn_post_topk = cfg.get_int("MODEL.RPN.POST_NMS_TOPK_TEST");
  plan.rpn_nms_thresh = cfg.get_float("MODEL.RPN.NMS_THRESH");
  plan.rpn_min_size = static_cast<double>(cfg.get_int("MODEL.PROPOSAL_GENERATOR.MIN_SIZE"));

  plan.roi_in = cfg.get_string_list("MODEL.ROI_HEADS.IN_FEATURES");
  std::vector<int64_t> strides;
  for (const auto& f : plan.roi_in) strides.push_back(level_stride(f));
  for (int64_t s : strides) plan.roi_scales.push_back(1.0 / static_cast<double>(s));
  const auto box = modeling::pooler_options_from_config(cfg, "ROI_BOX_HEAD", strides);
  plan.roi_canonical_level = box.canonical_level;
  plan.roi_canonical_size = box.canonical_box_size;
  plan.roi_min_level = std::lround(std::log2(static_cast<double>(strides.front())));
  plan.roi_max_level = std::lround(std::log2(static_cast<double>(strides.back())));
  plan.box = pooler_of(cfg, "ROI_BOX_HEAD", strides);

  const bool cascade = cfg.get_string("MODEL.ROI_HEADS.NAME") == "CascadeROIHeads";
  std::vector<std::vector<double>> cascade_weights;
  if (cascade) cascade_weights = cfg.get("MODEL.ROI_BOX_CASCADE_HEAD.BBOX_REG_WEIGHTS").as_float_list_list();
  const size_t stages = cascade ? cascade_weights.size() : 1;
  for (size_t k = 0; k < stages; ++k) {
    const std::string suffix = cascade ? "." + std::to_string(k) : "";
    plan.box_head_convs.push_back(layers.convs_under("roi_heads.box_head" + suffix + ".conv"));
    plan.box_head_fcs.push_back(layers.linears_under("roi_heads.box_head" + suffix + ".fc"));
    plan.box_predictors.push_back("roi_heads.box_predictor" + suffix);
    plan.box_reg_weights.push_back(
        cascade ? cascade_weights[k]
                : four(modeling::box_reg_weights_from_config(cfg, "MODEL.ROI_BOX_HEAD.BBOX_REG_WEIGHTS")));
  }
  plan.num_classes = cfg.get_int("MODEL.ROI_HEADS.NUM_CLASSES");
  plan.score_thresh = cfg.get_float("MODEL.ROI_HEADS.SCORE_THRESH_TEST");
  plan.nms_thresh = cfg.get_float("MODEL.ROI_HEADS.NMS_THRESH_TEST");
  plan.mask_on = cfg.get_bool("MODEL.MASK_ON");
  if (plan.mask_on) plan.mask = pooler_of(cfg, "ROI_MASK_HEAD", strides);
  plan.mask_convs = layers.convs_under("roi_heads.mask_head.mask_fcn");
  plan.keypoint_on = cfg.get_bool("MODEL.KEYPOINT_ON");
  if (plan.keypoint_on) plan.keypoint = pooler_of(cfg, "ROI_KEYPOINT_HEAD", strides);
  plan.keypoint_convs = layers.convs_under("roi_heads.keypoint_head.conv_fcn");
}

void plan_retinanet(ExportPlan& plan, const Layers& layers, torch::nn::Module& model,
                    const config::CfgNode& cfg) {
  plan_anchors(plan, model, "anchor_generator");
  plan.retinanet_in = cfg.get_string_list("MODEL.RETINANET.IN_FEATURES");
  plan.retinanet_cls_convs = layers.convs_under("head.cls_subnet.");
  plan.retinanet_bbox_convs = layers.convs_under("head.bbox_subnet.");
  plan.retinanet_topk_candidates = cfg.get_int("MODEL.RETINANET.TOPK_CANDIDATES_TEST");
  plan.retinanet_weights =
      four(modeling::box_reg_weights_from_config(cfg, "MODEL.RETINANET.BBOX_REG_WEIGHTS"));
  plan.num_classes = cfg.get_int("MODEL.RETINANET.NUM_CLASSES");
  plan.score_thresh = cfg.get_float("MODEL.RETINANET.SCORE_THRESH_TEST");
  plan.nms_thresh = cfg.get_float("MODEL.RETINANET.NMS_THRESH_TEST");
}

// SemSegFPNHead: its convs by input feature ("sem_seg_head.p4.0", "sem_seg_head.p4.2"), the
// features by increasing stride as the head sorts them.
void plan_sem_seg(ExportPlan& plan, const Layers& layers, const config::CfgNode& cfg) {
  plan.sem_seg_on = true;
  plan.sem_seg_common_stride = cfg.get_int("MODEL.SEM_SEG_HEAD.COMMON_STRIDE");
  plan.sem_seg_num_classes = cfg.get_int("MODEL.SEM_SEG_HEAD.NUM_CLASSES");
  plan.sem_seg_in = cfg.get_string_list("MODEL.SEM_SEG_HEAD.IN_FEATURES");
  std::stable_sort(
      plan.sem_seg_in.begin(), plan.sem_seg_in.end(),
      [](const std::string& a, const std::string& b) { return level_stride(a) < level_stride(b); });
  for (const auto& feature : plan.sem_seg_in) {
    plan.sem_seg_convs.push_back(layers.convs_under("sem_seg_head." + feature + "."));
    if (plan.sem_seg_convs.back().empty())
      throw Error("export: the semantic head has no convolutions for its input '" + feature + "'");
    plan.sem_seg_upsample.push_back(level_stride(feature) != plan.sem_seg_common_stride);
  }
  if (!plan.convs.count("sem_seg_head.predictor"))
    throw Error("export: the semantic head has no sem_seg_head.predictor");
}

void plan_panoptic(ExportPlan& plan, const config::CfgNode& cfg) {
  plan.panoptic_on = true;
  plan.combine_overlap_thresh = cfg.get_float("MODEL.PANOPTIC_FPN.COMBINE.OVERLAP_THRESH");
  plan.combine_stuff_area_limit = cfg.get_float("MODEL.PANOPTIC_FPN.COMBINE.STUFF_AREA_LIMIT");
  plan.combine_instances_confidence_thresh =
      cfg.get_float("MODEL.PANOPTIC_FPN.COMBINE.INSTANCES_CONFIDENCE_THRESH");
}

}  // namespace

void check_exportable(const config::CfgNode& cfg) {
  require(cfg, "MODEL.META_ARCHITECTURE",
          {"GeneralizedRCNN", "RetinaNet", "SemanticSegmentor", "PanopticFPN"});
  require(cfg, "MODEL.BACKBONE.NAME",
          {"build_resnet_fpn_backbone", "build_retinanet_resnet_fpn_backbone",
           "build_retinanet_resnet_fpn_p5_backbone"});
  const std::string meta_arch = cfg.get_string("MODEL.META_ARCHITECTURE");
  if (meta_arch == "SemanticSegmentor" || meta_arch == "PanopticFPN")
    require(cfg, "MODEL.SEM_SEG_HEAD.NAME", {"SemSegFPNHead"});
  if (meta_arch == "RetinaNet" || meta_arch == "SemanticSegmentor") return;
  if (meta_arch == "PanopticFPN" && !cfg.get_bool("MODEL.MASK_ON"))  // the combination's input
    throw Error(
        "export: PanopticFPN with MODEL.MASK_ON False has no exported form in detkit (the "
        "panoptic combination places the instances' masks)");
  require(cfg, "MODEL.PROPOSAL_GENERATOR.NAME", {"RPN"});
  require(cfg, "MODEL.ANCHOR_GENERATOR.NAME", {"DefaultAnchorGenerator"});
  require(cfg, "MODEL.RPN.HEAD_NAME", {"StandardRPNHead"});
  require(cfg, "MODEL.ROI_HEADS.NAME", {"StandardROIHeads", "CascadeROIHeads"});
  require(cfg, "MODEL.ROI_BOX_HEAD.NAME", {"FastRCNNConvFCHead"});
  if (cfg.get_bool("MODEL.ROI_BOX_HEAD.USE_SIGMOID_CE"))  // the exported graph takes a softmax
    throw Error(
        "export: MODEL.ROI_BOX_HEAD.USE_SIGMOID_CE True (sigmoid class scores) has no "
        "exported form in detkit");
  if (cfg.get_bool("MODEL.MASK_ON"))
    require(cfg, "MODEL.ROI_MASK_HEAD.NAME", {"MaskRCNNConvUpsampleHead"});
  if (cfg.get_bool("MODEL.KEYPOINT_ON"))
    require(cfg, "MODEL.ROI_KEYPOINT_HEAD.NAME", {"KRCNNConvDeconvUpsampleHead"});
}

ExportPlan plan_export(torch::nn::Module& model, const config::CfgNode& cfg) {
  check_exportable(cfg);
  ExportPlan plan;
  const Layers layers = collect_layers(model, plan);
  plan.meta_arch = cfg.get_string("MODEL.META_ARCHITECTURE");
  plan.pixel_mean = cfg.get_float_list("MODEL.PIXEL_MEAN");
  plan.pixel_std = cfg.get_float_list("MODEL.PIXEL_STD");
  plan.input_format = cfg.get_string("INPUT.FORMAT");
  plan.min_size_test = cfg.get_int("INPUT.MIN_SIZE_TEST");
  plan.max_size_test = cfg.get_int("INPUT.MAX_SIZE_TEST");
  plan.scale_clamp = modeling::kDefaultScaleClamp;
  plan.detections_per_image = cfg.get_int("TEST.DETECTIONS_PER_IMAGE");
  plan_backbone(plan, layers, cfg);
  if (plan.meta_arch == "RetinaNet")
    plan_retinanet(plan, layers, model, cfg);
  else if (plan.meta_arch != "SemanticSegmentor")
    plan_rcnn(plan, layers, model, cfg);
  if (plan.meta_arch == "SemanticSegmentor" || plan.meta_arch == "PanopticFPN")
    plan_sem_seg(plan, layers, cfg);
  if (plan.meta_arch == "PanopticFPN") plan_panoptic(plan, cfg);
  return plan;
}

}  // namespace detkit::export_

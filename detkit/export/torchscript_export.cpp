#include "detkit/export/torchscript_export.h"

#include <ATen/ATen.h>
#include <ATen/core/Dict.h>
#include <ATen/core/List.h>
#include <torch/csrc/jit/frontend/resolver.h>
#include <torch/csrc/jit/frontend/sugared_value.h>

#include <sstream>

#include "detkit/export/export_plan.h"
#include "detkit/utils/file_io.h"

namespace detkit::export_ {

extern const char* const kTorchScriptModelSource;  // torchscript_model.py, compiled in

namespace {

// Names the script may use beyond libtorch's native ones: `torch.<op>` is aten::<op> (as there),
// `ops.<namespace>.<op>` any registered op (detkit's own: ops.detkit.roi_align), the form
// TorchScript itself writes into a saved file and reads back.
struct OpNamespaces : torch::jit::SugaredValue {
  std::string kind() const override { return "op namespaces"; }
  std::shared_ptr<torch::jit::SugaredValue> attr(const torch::jit::SourceRange& /*loc*/,
                                                 torch::jit::GraphFunction& /*m*/,
                                                 const std::string& field) override {
    return std::make_shared<torch::jit::BuiltinModule>(field);
  }
};

struct ScriptResolver : torch::jit::NativeResolver {
  std::shared_ptr<torch::jit::SugaredValue> resolveValue(const std::string& name,
                                                         torch::jit::GraphFunction& m,
                                                         const torch::jit::SourceRange& loc) override {
    if (name == "ops") return std::make_shared<OpNamespaces>();
    return NativeResolver::resolveValue(name, m, loc);
  }
};

// Registers the module's attributes, typed as the script reads them.
class Attributes {
 public:
  explicit Attributes(torch::jit::Module& m) : m_(m) {}
  void set(const std::string& name, int64_t v) { m_.register_attribute(name, c10::IntType::get(), v); }
  void set(const std::string& name, double v) { m_.register_attribute(name, c10::FloatType::get(), v); }
  void set(const std::string& name, bool v) { m_.register_attribute(name, c10::BoolType::get(), v); }
  void set(const std::string& name, const std::string& v) {
    m_.register_attribute(name, c10::StringType::get(), v);
  }
  void set(const std::string& name, const at::Tensor& v) {
    m_.register_attribute(name, c10::TensorType::get(), v);
  }
  void set(const std::string& name, const std::vector<int64_t>& v) {
    m_.register_attribute(name, c10::ListType::ofInts(), c10::List<int64_t>(v));
  }
  void set(const std::string& name, const std::vector<double>& v) {
    m_.register_attribute(name, c10::ListType::ofFloats(), c10::List<double>(v));
  }
  void set(const std::string& name, const std::vector<std::string>& v) {
    m_.register_attribute(name, c10::ListType::ofStrings(), c10::List<std::string>(v));
  }
  void set(const std::string& name, const std::vector<bool>& v) {
    c10::List<bool> list;
    for (const bool item : v) list.push_back(item);
    m_.register_attribute(name, c10::ListType::ofBools(), list);
  }
  void set(const std::string& name, const std::vector<at::Tensor>& v) {
    m_.register_attribute(name, c10::ListType::ofTensors(), c10::List<at::Tensor>(v));
  }
  void set(const std::string& name, const std::vector<std::vector<std::string>>& v) {
    c10::List<c10::List<std::string>> list;
    for (const auto& item : v) list.push_back(c10::List<std::string>(item));
    m_.register_attribute(name, c10::ListType::create(c10::ListType::ofStrings()), list);
  }
  void set(const std::string& name, const std::vector<std::vector<double>>& v) {
    c10::List<c10::List<double>> list;
    for (const auto& item : v) list.push_back(c10::List<double>(item));
    m_.register_attribute(name, c10::ListType::create(c10::ListType::ofFloats()), list);
  }
  void set(const std::string& prefix, const PoolerSpec& p) {
    set(prefix + "_resolution", p.resolution);
    set(prefix + "_sampling_ratio", p.sampling_ratio);
    set(prefix + "_aligned", p.aligned);
  }

 private:
  torch::jit::Module& m_;
};

void set_layers(torch::jit::Module& m, const ExportPlan& plan) {
  c10::Dict<std::string, at::Tensor> weights;
  for (const auto& [name, t] : plan.weights) weights.insert(name, t);
  c10::Dict<std::string, c10::List<int64_t>> spec;  // stride, padding, dilation, groups, relu
  c10::Dict<std::string, std::string> norm;
  for (const auto& [name, c] : plan.convs) {
    spec.insert(name, c10::List<int64_t>({c.stride, c.padding, c.dilation, c.groups,
                                          int64_t{c.relu ? 1 : 0}}));
    norm.insert(name, c.norm);
  }
  const auto string_to = [](c10::TypePtr value) {
    return c10::DictType::create(c10::StringType::get(), std::move(value));
  };
  m.register_attribute("weights", string_to(c10::TensorType::get()), weights);
  m.register_attribute("conv_spec", string_to(c10::ListType::ofInts()), spec);
  m.register_attribute("conv_norm", string_to(c10::StringType::get()), norm);
}

void set_attributes(Attributes& a, const ExportPlan& p) {
  a.set("meta_arch", p.meta_arch);
  a.set("pixel_mean", at::tensor(p.pixel_mean, at::kFloat).reshape({-1, 1, 1}));
  a.set("pixel_std", at::tensor(p.pixel_std, at::kFloat).reshape({-1, 1, 1}));
  a.set("size_divisibility", p.size_divisibility);
  a.set("input_format", p.input_format);
  a.set("min_size_test", p.min_size_test);
  a.set("max_size_test", p.max_size_test);
  a.set("scale_clamp", p.scale_clamp);
  a.set("detections_per_image", p.detections_per_image);
  a.set("resnet_stem", p.resnet_stem);
  a.set("resnet_stages", p.resnet_stages);
  a.set("resnet_stage_names", p.resnet_stage_names);
  a.set("resnet_blocks", p.resnet_blocks);
  a.set("fpn_in", p.fpn_in);
  a.set("fpn_lateral", p.fpn_lateral);
  a.set("fpn_output", p.fpn_output);
  a.set("fpn_out", p.fpn_out);
  a.set("fpn_fuse_avg", p.fpn_fuse_avg);
  a.set("fpn_top_block", p.fpn_top_block);
  a.set("fpn_top_in", p.fpn_top_in);
  a.set("fpn_top_p6", p.fpn_top_p6);
  a.set("fpn_top_p7", p.fpn_top_p7);
  a.set("cell_anchors", p.cell_anchors);
  a.set("anchor_strides", p.anchor_strides);
  a.set("anchor_offset", p.anchor_offset);
  a.set("rpn_in", p.rpn_in);
  a.set("rpn_convs", p.rpn_convs);
  a.set("rpn_weights", p.rpn_weights);
  a.set("rpn_pre_topk", p.rpn_pre_topk);
  a.set("rpn_post_topk", p.rpn_post_topk);
  a.set("rpn_nms_thresh", p.rpn_nms_thresh);
  a.set("rpn_min_size", p.rpn_min_size);
  a.set("roi_in", p.roi_in);
  a.set("roi_scales", p.roi_scales);
  a.set("roi_canonical_level", p.roi_canonical_level);
  a.set("roi_canonical_size", p.roi_canonical_size);
  a.set("roi_min_level", p.roi_min_level);
  a.set("roi_max_level", p.roi_max_level);
  a.set("box", p.box);
  a.set("mask", p.mask);
  a.set("keypoint", p.keypoint);
  a.set("box_head_convs", p.box_head_convs);
  a.set("box_head_fcs", p.box_head_fcs);
  a.set("box_predictors", p.box_predictors);
  a.set("box_reg_weights", p.box_reg_weights);
  a.set("num_classes", p.num_classes);
  a.set("score_thresh", p.score_thresh);
  a.set("nms_thresh", p.nms_thresh);
  a.set("mask_on", p.mask_on);
  a.set("mask_convs", p.mask_convs);
  a.set("keypoint_on", p.keypoint_on);
  a.set("keypoint_convs", p.keypoint_convs);
  a.set("retinanet_in", p.retinanet_in);
  a.set("retinanet_cls_convs", p.retinanet_cls_convs);
  a.set("retinanet_bbox_convs", p.retinanet_bbox_convs);
  a.set("retinanet_topk_candidates", p.retinanet_topk_candidates);
  a.set("retinanet_weights", p.retinanet_weights);
  a.set("sem_seg_in", p.sem_seg_in);
  a.set("sem_seg_convs", p.sem_seg_convs);
  a.set("sem_seg_upsample", p.sem_seg_upsample);
  a.set("sem_seg_common_stride", p.sem_seg_common_stride);
  a.set("panoptic_on", p.panoptic_on);
  a.set("combine_overlap_thresh", p.combine_overlap_thresh);
  a.set("combine_stuff_area_limit", p.combine_stuff_area_limit);
  a.set("combine_instances_confidence_thresh", p.combine_instances_confidence_thresh);
}

}  // namespace

torch::jit::Module export_torchscript(torch::nn::Module& model, const config::CfgNode& cfg) {
  const ExportPlan plan = plan_export(model, cfg);
  torch::jit::Module m("__torch__.detkit.ExportedModel");
  set_layers(m, plan);
  Attributes attributes(m);
  set_attributes(attributes, plan);
  m.define(kTorchScriptModelSource, std::make_shared<ScriptResolver>());
  m.eval();
  return m;
}

void save_torchscript(torch::jit::Module& module, const std::string& path) {
  std::ostringstream bytes;
  module.save(bytes);
  atomic_write(path, bytes.str());
}

}  // namespace detkit::export_

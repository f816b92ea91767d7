#include "detkit/export/torchscript_export.h"

#include <ATen/core/Dict.h>
#include <ATen/core/List.h>
#include <torch/csrc/jit/frontend/resolver.h>
#include <torch/csrc/jit/frontend/sugared_value.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <sstream>

#include "detkit/layers/conv2d.h"
#include "detkit/modeling/anchor_generator.h"
#include "detkit/modeling/box_regression.h"
#include "detkit/modeling/roi_heads/poolers.h"
#include "detkit/utils/error.h"
#include "detkit/utils/file_io.h"

namespace detkit::export_ {

extern const char* const kTorchScriptModelSource;  // torchscript_model.py, compiled in

namespace {

using c10::IValue;

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

// What can be exported, by config key: the value the model has, and the values that have a
// TorchScript form.
void require(const config::CfgNode& cfg, const std::string& key,
             const std::vector<std::string>& supported) {
  const std::string value = cfg.get_string(key);
  if (std::find(supported.begin(), supported.end(), value) != supported.end()) return;
  std::string list;
  for (const auto& s : supported) list += (list.empty() ? "" : ", ") + s;
  throw Error("export: " + key + " '" + value + "' has no TorchScript form in detkit (exported: " +
              list + ")");
}

}  // namespace

void check_torchscript_exportable(const config::CfgNode& cfg) {
  require(cfg, "MODEL.META_ARCHITECTURE", {"GeneralizedRCNN", "RetinaNet"});
  require(cfg, "MODEL.BACKBONE.NAME",
          {"build_resnet_fpn_backbone", "build_retinanet_resnet_fpn_backbone",
           "build_retinanet_resnet_fpn_p5_backbone"});
  if (cfg.get_string("MODEL.META_ARCHITECTURE") == "RetinaNet") return;
  require(cfg, "MODEL.PROPOSAL_GENERATOR.NAME", {"RPN"});
  require(cfg, "MODEL.ANCHOR_GENERATOR.NAME", {"DefaultAnchorGenerator"});
  require(cfg, "MODEL.RPN.HEAD_NAME", {"StandardRPNHead"});
  require(cfg, "MODEL.ROI_HEADS.NAME", {"StandardROIHeads", "CascadeROIHeads"});
  require(cfg, "MODEL.ROI_BOX_HEAD.NAME", {"FastRCNNConvFCHead"});
  if (cfg.get_bool("MODEL.MASK_ON"))
    require(cfg, "MODEL.ROI_MASK_HEAD.NAME", {"MaskRCNNConvUpsampleHead"});
  if (cfg.get_bool("MODEL.KEYPOINT_ON"))
    require(cfg, "MODEL.ROI_KEYPOINT_HEAD.NAME", {"KRCNNConvDeconvUpsampleHead"});
}

namespace {

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

// The model's layers, by state-dict prefix, in registration order.
struct Layers {
  std::vector<std::string> convs;  // layers::Conv2d and ConvTranspose2d
  std::vector<std::string> linears;
  c10::Dict<std::string, c10::List<int64_t>> spec;  // stride, padding, dilation, groups, relu
  c10::Dict<std::string, std::string> norm;

  std::vector<std::string> convs_under(const std::string& prefix) const {
    std::vector<std::string> out;
    for (const auto& name : convs)
      if (starts_with(name, prefix)) out.push_back(name);
    return out;
  }
  std::vector<std::string> linears_under(const std::string& prefix) const {
    std::vector<std::string> out;
    for (const auto& name : linears)
      if (starts_with(name, prefix)) out.push_back(name);
    return out;
  }
};

Layers collect_layers(torch::nn::Module& model) {
  Layers layers;
  std::set<std::string> known;  // modules whose tensors the script reads
  for (const auto& item : model.named_modules("", /*include_self=*/false)) {
    const std::string& name = item.key();
    torch::nn::Module* m = item.value().get();
    if (auto* conv = dynamic_cast<layers::Conv2dImpl*>(m)) {
      const auto& o = conv->options();
      layers.convs.push_back(name);
      layers.spec.insert(name, c10::List<int64_t>({o.stride(), o.padding(), o.dilation(), o.groups(),
                                                   int64_t{o.relu() ? 1 : 0}}));
      layers.norm.insert(name, o.norm());
      known.insert(name);
      if (!o.norm().empty()) known.insert(name + ".norm");
    } else if (auto* deconv = dynamic_cast<torch::nn::ConvTranspose2dImpl*>(m)) {
      const auto& o = deconv->options;
      const auto* padding = c10::get_if<torch::ExpandingArray<2>>(&o.padding());
      const bool plain = padding != nullptr && (*padding)->at(0) == (*padding)->at(1) &&
                         o.stride()->at(0) == o.stride()->at(1) && o.groups() == 1 &&
                         o.output_padding()->at(0) == 0 && o.output_padding()->at(1) == 0 &&
                         o.dilation()->at(0) == 1 && o.dilation()->at(1) == 1 && o.bias();
      if (!plain)
        throw Error("export: the transposed convolution " + name +
                    " has settings the exported model does not handle (square stride and "
                    "padding, one group, no dilation or output padding, a bias)");
      layers.convs.push_back(name);
      layers.spec.insert(name, c10::List<int64_t>({o.stride()->at(0), (*padding)->at(0), int64_t{1}, int64_t{1}, int64_t{0}}));
      layers.norm.insert(name, "");
      known.insert(name);
    } else if (dynamic_cast<torch::nn::LinearImpl*>(m) != nullptr) {
      layers.linears.push_back(name);
      known.insert(name);
    }
  }
  // Every tensor must belong to a layer the script runs: anything else is a layer it would skip.
  auto check = [&](const std::string& tensor_name) {
    const std::string owner = tensor_name.substr(0, tensor_name.rfind('.'));
    if (!known.count(owner))
      throw Error("export: " + tensor_name + " belongs to a layer without a TorchScript form (" +
                  owner + ")");
  };
  for (const auto& p : model.named_parameters()) check(p.key());
  for (const auto& b : model.named_buffers()) check(b.key());
  return layers;
}

c10::Dict<std::string, at::Tensor> state_dict(torch::nn::Module& model) {
  c10::Dict<std::string, at::Tensor> out;
  for (const auto& p : model.named_parameters())
    out.insert(p.key(), p.value().detach().to(at::kCPU, at::kFloat).clone());
  for (const auto& b : model.named_buffers())
    out.insert(b.key(), b.value().detach().to(at::kCPU).clone());
  return out;
}

// "p4" -> 16: an FPN level's stride (detkit's and Detectron2's FPN name levels by log2(stride)).
int64_t level_stride(const std::string& feature) {
  if (feature.size() < 2 || feature[0] != 'p')
    throw Error("export: feature '" + feature + "' is not an FPN level (p2 .. p7)");
  return int64_t{1} << std::stoll(feature.substr(1));
}

std::vector<int64_t> strides_of(const std::vector<std::string>& features) {
  std::vector<int64_t> out;
  for (const auto& f : features) out.push_back(level_stride(f));
  return out;
}

c10::List<std::string> strings(const std::vector<std::string>& v) { return c10::List<std::string>(v); }
c10::List<double> floats(const std::vector<double>& v) { return c10::List<double>(v); }
c10::List<double> floats(const std::array<double, 4>& a) {
  return c10::List<double>(std::vector<double>(a.begin(), a.end()));
}

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
  void set(const std::string& name, const c10::List<int64_t>& v) {
    m_.register_attribute(name, c10::ListType::ofInts(), v);
  }
  void set(const std::string& name, const c10::List<double>& v) {
    m_.register_attribute(name, c10::ListType::ofFloats(), v);
  }
  void set(const std::string& name, const c10::List<std::string>& v) {
    m_.register_attribute(name, c10::ListType::ofStrings(), v);
  }
  void set(const std::string& name, const c10::List<at::Tensor>& v) {
    m_.register_attribute(name, c10::ListType::ofTensors(), v);
  }
  void set(const std::string& name, const c10::List<c10::List<std::string>>& v) {
    m_.register_attribute(name, c10::ListType::create(c10::ListType::ofStrings()), v);
  }
  void set(const std::string& name, const c10::List<c10::List<double>>& v) {
    m_.register_attribute(name, c10::ListType::create(c10::ListType::ofFloats()), v);
  }

 private:
  torch::jit::Module& m_;
};

void set_backbone(Attributes& a, const Layers& layers, const config::CfgNode& cfg) {
  const std::string bottom = "backbone.bottom_up.";
  a.set("resnet_stem", bottom + "stem.conv1");
  std::vector<std::string> stages, stage_names;
  std::vector<int64_t> blocks;
  for (int stage = 2; stage <= 5; ++stage) {
    const std::string name = "res" + std::to_string(stage);
    std::set<std::string> indices;
    for (const auto& conv : layers.convs_under(bottom + name + ".")) {
      const std::string rest = conv.substr(bottom.size() + name.size() + 1);
      indices.insert(rest.substr(0, rest.find('.')));
    }
    if (indices.empty()) break;
    stages.push_back(bottom + name);
    stage_names.push_back(name);
    blocks.push_back(static_cast<int64_t>(indices.size()));
  }
  a.set("resnet_stages", strings(stages));
  a.set("resnet_stage_names", strings(stage_names));
  a.set("resnet_blocks", c10::List<int64_t>(blocks));

  const std::vector<std::string> laterals = layers.convs_under("backbone.fpn_lateral");
  std::vector<std::string> outputs, levels;
  for (const auto& lateral : laterals) {
    const std::string stage = lateral.substr(std::string("backbone.fpn_lateral").size());
    outputs.push_back("backbone.fpn_output" + stage);
    levels.push_back("p" + stage);
  }
  const std::string name = cfg.get_string("MODEL.BACKBONE.NAME");
  const std::string top = name == "build_resnet_fpn_backbone" ? "max_pool" : "p6p7";
  const int64_t last = std::stoll(levels.back().substr(1));
  levels.push_back("p" + std::to_string(last + 1));
  if (top == "p6p7") levels.push_back("p" + std::to_string(last + 2));
  a.set("fpn_in", strings(cfg.get_string_list("MODEL.FPN.IN_FEATURES")));
  a.set("fpn_lateral", strings(laterals));
  a.set("fpn_output", strings(outputs));
  a.set("fpn_out", strings(levels));
  a.set("fpn_fuse_avg", cfg.get_string("MODEL.FPN.FUSE_TYPE") == "avg");
  a.set("fpn_top_block", top);
  a.set("fpn_top_in", std::string(name == "build_retinanet_resnet_fpn_p5_backbone" ? "p5" : "res5"));
  a.set("fpn_top_p6", std::string("backbone.top_block.p6"));
  a.set("fpn_top_p7", std::string("backbone.top_block.p7"));
}

void set_anchors(Attributes& a, torch::nn::Module& model, const std::string& name) {
  const auto modules = model.named_modules("", false);
  const auto* generator =
      modules.contains(name) ? dynamic_cast<modeling::DefaultAnchorGeneratorImpl*>(modules[name].get())
                             : nullptr;
  if (generator == nullptr) throw Error("export: the model has no DefaultAnchorGenerator at " + name);
  c10::List<at::Tensor> cells;
  for (const auto& c : generator->cell_anchors()) cells.push_back(c.to(at::kCPU).clone());
  a.set("cell_anchors", cells);
  a.set("anchor_strides", c10::List<int64_t>(generator->options.strides()));
  a.set("anchor_offset", generator->options.offset());
}

struct Pooler {
  int64_t resolution = 0, sampling_ratio = 0;
  bool aligned = true;
};

Pooler pooler_of(const config::CfgNode& cfg, const std::string& head,
                 const std::vector<int64_t>& strides) {
  const modeling::ROIPoolerOptions o = modeling::pooler_options_from_config(cfg, head, strides);
  if (o.pooler_type != "ROIAlign" && o.pooler_type != "ROIAlignV2")
    throw Error("export: MODEL." + head + ".POOLER_TYPE '" + o.pooler_type +
                "' has no TorchScript form (exported: ROIAlign, ROIAlignV2)");
  return {o.output_size, o.sampling_ratio, o.pooler_type == "ROIAlignV2"};
}

void set_pooler(Attributes& a, const std::string& prefix, const Pooler& p) {
  a.set(prefix + "_resolution", p.resolution);
  a.set(prefix + "_sampling_ratio", p.sampling_ratio);
  a.set(prefix + "_aligned", p.aligned);
}

void set_rcnn(Attributes& a, const Layers& layers, torch::nn::Module& model,
              const config::CfgNode& cfg) {
  set_anchors(a, model, "proposal_generator.anchor_generator");
  a.set("rpn_in", strings(cfg.get_string_list("MODEL.RPN.IN_FEATURES")));
  a.set("rpn_convs", strings(layers.convs_under("proposal_generator.rpn_head.conv")));
  a.set("rpn_weights", floats(modeling::box_reg_weights_from_config(cfg, "MODEL.RPN.BBOX_REG_WEIGHTS")));
  a.set("rpn_pre_topk", cfg.get_int("MODEL.RPN.PRE_NMS_TOPK_TEST"));
  a.set("rpn_post_topk", cfg.get_int("MODEL.RPN.POST_NMS_TOPK_TEST"));
  a.set("rpn_nms_thresh", cfg.get_float("MODEL.RPN.NMS_THRESH"));
  a.set("rpn_min_size", static_cast<double>(cfg.get_int("MODEL.PROPOSAL_GENERATOR.MIN_SIZE")));

  const std::vector<std::string> in = cfg.get_string_list("MODEL.ROI_HEADS.IN_FEATURES");
  const std::vector<int64_t> strides = strides_of(in);
  a.set("roi_in", strings(in));
  std::vector<double> scales;
  for (int64_t s : strides) scales.push_back(1.0 / static_cast<double>(s));
  a.set("roi_scales", floats(scales));
  const modeling::ROIPoolerOptions box = modeling::pooler_options_from_config(cfg, "ROI_BOX_HEAD", strides);
  a.set("roi_canonical_level", box.canonical_level);
  a.set("roi_canonical_size", box.canonical_box_size);
  a.set("roi_min_level", std::lround(std::log2(static_cast<double>(strides.front()))));
  a.set("roi_max_level", std::lround(std::log2(static_cast<double>(strides.back()))));
  set_pooler(a, "box", pooler_of(cfg, "ROI_BOX_HEAD", strides));

  const bool cascade = cfg.get_string("MODEL.ROI_HEADS.NAME") == "CascadeROIHeads";
  c10::List<c10::List<std::string>> head_convs, head_fcs;
  c10::List<c10::List<double>> reg_weights;
  std::vector<std::string> predictors;
  std::vector<std::vector<double>> cascade_weights;
  if (cascade) cascade_weights = cfg.get("MODEL.ROI_BOX_CASCADE_HEAD.BBOX_REG_WEIGHTS").as_float_list_list();
  const size_t stages = cascade ? cascade_weights.size() : 1;
  for (size_t k = 0; k < stages; ++k) {
    const std::string suffix = cascade ? "." + std::to_string(k) : "";
    head_convs.push_back(strings(layers.convs_under("roi_heads.box_head" + suffix + ".conv")));
    head_fcs.push_back(strings(layers.linears_under("roi_heads.box_head" + suffix + ".fc")));
    predictors.push_back("roi_heads.box_predictor" + suffix);
    reg_weights.push_back(cascade ? floats(cascade_weights[k])
                                  : floats(modeling::box_reg_weights_from_config(
                                        cfg, "MODEL.ROI_BOX_HEAD.BBOX_REG_WEIGHTS")));
  }
  a.set("box_head_convs", head_convs);
  a.set("box_head_fcs", head_fcs);
  a.set("box_predictors", strings(predictors));
  a.set("box_reg_weights", reg_weights);
  a.set("num_classes", cfg.get_int("MODEL.ROI_HEADS.NUM_CLASSES"));
  a.set("score_thresh", cfg.get_float("MODEL.ROI_HEADS.SCORE_THRESH_TEST"));
  a.set("nms_thresh", cfg.get_float("MODEL.ROI_HEADS.NMS_THRESH_TEST"));

  const bool mask = cfg.get_bool("MODEL.MASK_ON"), keypoint = cfg.get_bool("MODEL.KEYPOINT_ON");
  a.set("mask_on", mask);
  set_pooler(a, "mask", mask ? pooler_of(cfg, "ROI_MASK_HEAD", strides) : Pooler{});
  a.set("mask_convs", strings(layers.convs_under("roi_heads.mask_head.mask_fcn")));
  a.set("keypoint_on", keypoint);
  set_pooler(a, "keypoint", keypoint ? pooler_of(cfg, "ROI_KEYPOINT_HEAD", strides) : Pooler{});
  a.set("keypoint_convs", strings(layers.convs_under("roi_heads.keypoint_head.conv_fcn")));
}

void set_retinanet(Attributes& a, const Layers& layers, torch::nn::Module& model,
                   const config::CfgNode& cfg) {
  set_anchors(a, model, "anchor_generator");
  a.set("retinanet_in", strings(cfg.get_string_list("MODEL.RETINANET.IN_FEATURES")));
  a.set("retinanet_cls_convs", strings(layers.convs_under("head.cls_subnet.")));
  a.set("retinanet_bbox_convs", strings(layers.convs_under("head.bbox_subnet.")));
  a.set("retinanet_topk_candidates", cfg.get_int("MODEL.RETINANET.TOPK_CANDIDATES_TEST"));
  a.set("retinanet_weights",
        floats(modeling::box_reg_weights_from_config(cfg, "MODEL.RETINANET.BBOX_REG_WEIGHTS")));
  a.set("num_classes", cfg.get_int("MODEL.RETINANET.NUM_CLASSES"));
  a.set("score_thresh", cfg.get_float("MODEL.RETINANET.SCORE_THRESH_TEST"));
  a.set("nms_thresh", cfg.get_float("MODEL.RETINANET.NMS_THRESH_TEST"));
}

// The R-CNN attributes a RetinaNet does not use, and the reverse: the script reads all of them.
void set_unused(Attributes& a, bool retinanet) {
  const c10::List<std::string> none;
  if (retinanet) {
    a.set("rpn_in", none);
    a.set("rpn_convs", none);
    a.set("rpn_weights", c10::List<double>());
    a.set("rpn_pre_topk", int64_t{0});
    a.set("rpn_post_topk", int64_t{0});
    a.set("rpn_nms_thresh", 0.0);
    a.set("rpn_min_size", 0.0);
    a.set("roi_in", none);
    a.set("roi_scales", c10::List<double>());
    a.set("roi_canonical_level", int64_t{4});
    a.set("roi_canonical_size", int64_t{224});
    a.set("roi_min_level", int64_t{0});
    a.set("roi_max_level", int64_t{0});
    for (const char* p : {"box", "mask", "keypoint"}) set_pooler(a, p, Pooler{});
    a.set("box_head_convs", c10::List<c10::List<std::string>>());
    a.set("box_head_fcs", c10::List<c10::List<std::string>>());
    a.set("box_predictors", none);
    a.set("box_reg_weights", c10::List<c10::List<double>>());
    a.set("mask_on", false);
    a.set("mask_convs", none);
    a.set("keypoint_on", false);
    a.set("keypoint_convs", none);
  } else {
    a.set("retinanet_in", none);
    a.set("retinanet_cls_convs", none);
    a.set("retinanet_bbox_convs", none);
    a.set("retinanet_topk_candidates", int64_t{0});
    a.set("retinanet_weights", c10::List<double>());
  }
}

}  // namespace

torch::jit::Module export_torchscript(modeling::MetaArch& model, const config::CfgNode& cfg) {
  check_torchscript_exportable(cfg);
  const Layers layers = collect_layers(model);
  torch::jit::Module m("__torch__.detkit.ExportedModel");
  Attributes a(m);
  m.register_attribute("weights", c10::DictType::create(c10::StringType::get(), c10::TensorType::get()),
                       state_dict(model));
  m.register_attribute("conv_spec",
                       c10::DictType::create(c10::StringType::get(), c10::ListType::ofInts()),
                       layers.spec);
  m.register_attribute("conv_norm", c10::DictType::create(c10::StringType::get(), c10::StringType::get()),
                       layers.norm);
  const std::string meta_arch = cfg.get_string("MODEL.META_ARCHITECTURE");
  a.set("meta_arch", meta_arch);
  a.set("pixel_mean", at::tensor(cfg.get_float_list("MODEL.PIXEL_MEAN"), at::kFloat).reshape({-1, 1, 1}));
  a.set("pixel_std", at::tensor(cfg.get_float_list("MODEL.PIXEL_STD"), at::kFloat).reshape({-1, 1, 1}));
  // The FPN's coarsest input level: padding to a multiple of its stride, as the model's ImageList.
  const std::vector<std::string> fpn_in = cfg.get_string_list("MODEL.FPN.IN_FEATURES");
  a.set("size_divisibility", int64_t{1} << std::stoll(fpn_in.back().substr(3)));
  // How a caller prepares the input (the test mapper's resize and channel order).
  a.set("input_format", cfg.get_string("INPUT.FORMAT"));
  a.set("min_size_test", cfg.get_int("INPUT.MIN_SIZE_TEST"));
  a.set("max_size_test", cfg.get_int("INPUT.MAX_SIZE_TEST"));
  a.set("scale_clamp", modeling::Box2BoxTransform({1, 1, 1, 1}).scale_clamp());
  a.set("detections_per_image", cfg.get_int("TEST.DETECTIONS_PER_IMAGE"));
  set_backbone(a, layers, cfg);
  const bool retinanet = meta_arch == "RetinaNet";
  if (retinanet)
    set_retinanet(a, layers, model, cfg);
  else
    set_rcnn(a, layers, model, cfg);
  set_unused(a, retinanet);
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

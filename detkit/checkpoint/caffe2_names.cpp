#include "detkit/checkpoint/caffe2_names.h"

#include <ATen/ATen.h>
#include <spdlog/spdlog.h>

#include <regex>
#include <sstream>
#include <vector>

#include "detkit/utils/error.h"
#include "detkit/utils/strings.h"

namespace detkit::checkpoint {
namespace {

// One rewriting step: a regex (replace every match) or a plain substring (replace every copy).
struct Rule {
  bool regex;
  std::string from, to;
};

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

// Detectron2's convert_basic_c2_names (after "_" -> "."), then convert_c2_detectron_names'
// RPN, box head, mask and keypoint rules, in its order; FPN names are handled by fpn_name.
const std::vector<Rule>& basic_rules() {
  static const std::vector<Rule> rules = {
      {true, "\\.b$", ".bias"},
      {true, "\\.w$", ".weight"},
      {true, "bn\\.s$", "norm.weight"},
      {true, "bn\\.bias$", "norm.bias"},
      {true, "bn\\.rm", "norm.running_mean"},
      {true, "bn\\.running.mean$", "norm.running_mean"},
      {true, "bn\\.riv$", "norm.running_var"},
      {true, "bn\\.running.var$", "norm.running_var"},
      {true, "bn\\.gamma$", "norm.weight"},
      {true, "bn\\.beta$", "norm.bias"},
      {true, "gn\\.s$", "norm.weight"},
      {true, "gn\\.bias$", "norm.bias"},
      {true, "^res\\.conv1\\.norm\\.", "conv1.norm."},
      {true, "^conv1\\.", "stem.conv1."},
      {false, ".branch1.", ".shortcut."},
      {false, ".branch2a.", ".conv1."},
      {false, ".branch2b.", ".conv2."},
      {false, ".branch2c.", ".conv3."},
      {true, "^body.conv.fcn", "body_conv_fcn"},
      {false, "AnnIndex.lowres", "ann_index_lowres"},
      {false, "Index.UV.lowres", "index_uv_lowres"},
      {false, "U.lowres", "u_lowres"},
      {false, "V.lowres", "v_lowres"},
      {false, "conv.rpn.fpn2", "proposal_generator.rpn_head.conv"},
      {false, "conv.rpn", "proposal_generator.rpn_head.conv"},
      {false, "rpn.bbox.pred.fpn2", "proposal_generator.rpn_head.anchor_deltas"},
      {false, "rpn.cls.logits.fpn2", "proposal_generator.rpn_head.objectness_logits"},
      {false, "rpn.bbox.pred", "proposal_generator.rpn_head.anchor_deltas"},
      {false, "rpn.cls.logits", "proposal_generator.rpn_head.objectness_logits"},
      {true, "^bbox\\.pred", "bbox_pred"},
      {true, "^cls\\.score", "cls_score"},
      {true, "^fc6\\.", "box_head.fc1."},
      {true, "^fc7\\.", "box_head.fc2."},
      {true, "^head\\.conv", "box_head.conv"},
  };
  return rules;
}

const std::vector<Rule>& head_rules() {
  static const std::vector<Rule> rules = {
      {false, ".[mask].fcn", "mask_head.mask_fcn"},
      {true, "^\\.mask\\.fcn", "mask_head.mask_fcn"},
      {false, "mask.fcn.logits", "mask_head.predictor"},
      {false, "conv5.mask", "mask_head.deconv"},
      {false, "conv.fcn", "roi_heads.keypoint_head.conv_fcn"},
      {false, "kps.score.lowres", "roi_heads.keypoint_head.score_lowres"},
      {false, "kps.score.", "roi_heads.keypoint_head.score."},
  };
  return rules;
}

std::string apply(std::string name, const std::vector<Rule>& rules) {
  for (const Rule& rule : rules) {
    if (rule.regex) {
      name = std::regex_replace(name, std::regex(rule.from), rule.to);
    } else {
      name = replace_all(std::move(name), rule.from, rule.to);
    }
  }
  return name;
}

std::vector<std::string> split_dots(const std::string& name) {
  std::vector<std::string> parts;
  std::stringstream in(name);
  for (std::string part; std::getline(in, part, '.');) parts.push_back(part);
  if (!name.empty() && name.back() == '.') parts.emplace_back();
  return parts;
}

// fpn.inner.res2.2.sum.lateral.weight -> fpn_lateral2.weight; fpn.res2.2.sum.weight ->
// fpn_output2.weight (".norm" kept when the name has a norm part).
std::string fpn_name(const std::string& name, const std::string& caffe2_name) {
  const bool lateral = name.rfind("fpn.inner.", 0) == 0;
  if (!lateral && name.rfind("fpn.res", 0) != 0) return name;
  const std::vector<std::string> parts = split_dots(name);
  const std::string& stage_part = parts[lateral ? 2 : 1];
  const std::string digits = stage_part.size() > 3 ? stage_part.substr(3) : "";
  if (stage_part.rfind("res", 0) != 0 || digits.empty() ||
      digits.find_first_not_of("0123456789") != std::string::npos)
    throw Error("Caffe2 weight '" + caffe2_name + "': FPN name without a resN stage");
  bool norm = false;
  for (const std::string& part : parts) norm = norm || part == "norm";
  return std::string(lateral ? "fpn_lateral" : "fpn_output") + std::to_string(std::stoi(digits)) +
         (norm ? ".norm" : "") + "." + parts.back();
}

std::string shape_tuple(const at::Tensor& t) {
  std::string out = "(";
  for (int64_t d = 0; d < t.dim(); ++d) out += (d ? ", " : "") + std::to_string(t.size(d));
  return out + (t.dim() == 1 ? ",)" : ")");
}

}  // namespace

std::string caffe2_to_detectron2_name(const std::string& caffe2_name) {
  std::string name = caffe2_name == "pred_b"   ? "linear_b"
                     : caffe2_name == "pred_w" ? "linear_w"
                                               : caffe2_name;
  name = replace_all(name, "_", ".");
  name = apply(std::move(name), basic_rules());
  name = fpn_name(name, caffe2_name);
  return apply(std::move(name), head_rules());
}

RenamedWeights convert_caffe2_detectron_names(const TensorDict& weights) {
  spdlog::info("Renaming Caffe2 weights ......");
  RenamedWeights out;
  for (const auto& [caffe2_name, tensor] : weights) {
    const std::string name = caffe2_to_detectron2_name(caffe2_name);
    auto [it, inserted] = out.original.emplace(name, caffe2_name);
    if (!inserted)
      throw Error("Caffe2 weights '" + it->second + "' and '" + caffe2_name + "' both become '" +
                  name + "'");
    at::Tensor value = tensor;
    if ((starts_with(name, "bbox_pred.") || starts_with(name, "mask_head.predictor.")) &&
        tensor.dim() > 0) {
      const int64_t background = starts_with(name, "bbox_pred.") ? 4 : 1;
      value = tensor.slice(0, std::min(background, tensor.size(0)));
      spdlog::info(
          "Remove prediction weight for background class in {}. The shape changes from {} to {}.",
          name, shape_tuple(tensor), shape_tuple(value));
    } else if (starts_with(name, "cls_score.") && tensor.dim() > 0 && tensor.size(0) > 0) {
      spdlog::info(
          "Move classification weights for background class in {} from index 0 to index {}.", name,
          tensor.size(0) - 1);
      value = at::cat({tensor.slice(0, 1), tensor.slice(0, 0, 1)});
    }
    out.weights.emplace(name, value.contiguous());
  }
  return out;
}

}  // namespace detkit::checkpoint

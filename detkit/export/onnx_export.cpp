#include "detkit/export/onnx_export.h"

#include <ATen/ATen.h>

#include <cmath>
#include <limits>
#include <map>

#include "detkit/export/export_plan.h"
#include "detkit/export/onnx_graph.h"
#include "detkit/utils/error.h"

namespace detkit::export_ {
namespace {

constexpr int64_t kOpset = 17;
constexpr int64_t kEnd = std::numeric_limits<int64_t>::max();  // Slice to the end

using Names = std::vector<std::string>;

// The export plan unrolled into an ONNX graph, step by step as torchscript_model.py runs it (the
// same names: preprocess, backbone, rpn, roi_heads, retinanet, postprocess).
class OnnxWriter {
 public:
  explicit OnnxWriter(const ExportPlan& plan) : p_(plan) {}

  std::string write() {
    const std::string image = g_.input("image", OnnxType::kUInt8, {int64_t{3}, "height", "width"});
    const std::string original = g_.input("original_size", OnnxType::kInt64, {int64_t{2}});
    const std::string in_h = dim(image, 1), in_w = dim(image, 2);
    const std::map<std::string, std::string> features = backbone(preprocess(image));
    std::string doc = "detkit " + p_.meta_arch + ": image uint8 (3, H, W) in " + p_.input_format +
                      " resized as the test mapper (shorter side " +
                      std::to_string(p_.min_size_test) + ", longer at most " +
                      std::to_string(p_.max_size_test) + "), original_size int64 (height, width); ";
    if (p_.meta_arch == "SemanticSegmentor") {
      g_.output(sem_seg(features, in_h, in_w, original), "sem_seg", OnnxType::kFloat, 3);
      doc += "sem_seg (C, height, width) logits";
    } else {
      const std::string in_limits = limits(in_h, in_w);
      Found found = p_.meta_arch == "RetinaNet"
                        ? retinanet(features, in_limits)
                        : roi_heads(features, rpn(features, in_limits), in_limits);
      const Found final = postprocess(found, in_h, in_w, original);
      doc += "detections in original_size's pixels";
      if (p_.panoptic_on) {
        const std::string logits = sem_seg(features, in_h, in_w, original);
        g_.output(logits, "sem_seg", OnnxType::kFloat, 3);
        combine(final, op("ArgMax", {logits}, {{"axis", int64_t{0}}, {"keepdims", int64_t{0}}}));
        doc +=
            ", sem_seg (C, height, width) logits, panoptic_seg (height, width) int32 and "
            "segments_info (S, 5) int64: id, isthing, category_id, instance_id, area";
      }
    }
    return g_.model_bytes(kOpset, doc,
                          {{"input_format", p_.input_format},
                           {"min_size_test", std::to_string(p_.min_size_test)},
                           {"max_size_test", std::to_string(p_.max_size_test)}});
  }

 private:
  struct Found {
    std::string boxes, scores, classes, masks, keypoints;  // masks: (R, M, M) probabilities
  };

  // ---- graph helpers ------------------------------------------------------------------------
  std::string op(const std::string& type, const Names& inputs, const std::vector<OnnxAttribute>& a = {}) {
    return g_.node(type, inputs, a);
  }
  std::string w(const std::string& name) { return g_.weight(name, p_.weights.at(name)); }
  bool has(const std::string& name) const { return p_.weights.count(name) > 0; }
  std::string f(float v) { return g_.scalar_float(v); }
  std::string i64(const std::vector<int64_t>& v) { return g_.ints(v); }
  // Size `axis` of x as a 1-element int64 tensor.
  std::string dim(const std::string& x, int64_t axis) {
    return op("Shape", {x}, {{"start", axis}, {"end", axis + 1}});
  }
  std::string scalar(const std::string& one) { return op("Squeeze", {one, i64({0})}); }
  std::string unsqueeze(const std::string& x, const std::vector<int64_t>& axes) {
    return op("Unsqueeze", {x, i64(axes)});
  }
  std::string squeeze(const std::string& x, const std::vector<int64_t>& axes) {
    return op("Squeeze", {x, i64(axes)});
  }
  std::string gather(const std::string& x, const std::string& index, int64_t axis = 0) {
    return op("Gather", {x, index}, {{"axis", axis}});
  }
  std::string slice(const std::string& x, int64_t start, int64_t end, int64_t axis, int64_t step = 1) {
    return op("Slice", {x, i64({start}), i64({end}), i64({axis}), i64({step})});
  }
  std::string column(const std::string& x, int64_t j) { return slice(x, j, j + 1, 1); }  // (N, 1)
  std::string to_float(const std::string& x) { return op("Cast", {x}, {{"to", int64_t{1}}}); }
  std::string to_int(const std::string& x) { return op("Cast", {x}, {{"to", int64_t{7}}}); }
  std::string range(const std::string& count) {  // 0 .. count-1, count a 0-d int64
    return op("Range", {g_.scalar_int(0), count, g_.scalar_int(1)});
  }
  std::string concat(const Names& parts, int64_t axis) { return op("Concat", parts, {{"axis", axis}}); }
  // The rows of x where `mask` (N) holds.
  std::string rows(const std::string& x, const std::string& mask) {
    return gather(x, where(mask));
  }
  std::string where(const std::string& mask) { return squeeze(op("NonZero", {mask}), {0}); }
  // [w, h, w, h] float bounds of an image of h x w (1-element int64 each).
  std::string limits(const std::string& h, const std::string& w) {
    const std::string hf = to_float(h), wf = to_float(w);
    return concat({wf, hf, wf, hf}, 0);
  }

  // ---- layers -------------------------------------------------------------------------------
  std::string conv(const std::string& name, const std::string& x) {
    const ConvSpec& c = p_.convs.at(name);
    Names inputs = {x, w(name + ".weight")};
    if (has(name + ".bias")) inputs.push_back(w(name + ".bias"));
    const std::vector<int64_t> stride = {c.stride, c.stride}, pads(4, c.padding);
    if (c.transposed) return op("ConvTranspose", inputs, {{"strides", stride}, {"pads", pads}});
    std::string y = op("Conv", inputs,
                       {{"strides", stride}, {"pads", pads}, {"dilations", std::vector<int64_t>{c.dilation, c.dilation}},
                        {"group", c.groups}});
    if (c.norm == "GN") {
      y = group_norm(name + ".norm", y);
    } else if (!c.norm.empty()) {  // FrozenBN, and BN / SyncBN in eval: the running statistics
      const std::string n = name + ".norm.";
      y = op("BatchNormalization",
             {y, w(n + "weight"), w(n + "bias"), w(n + "running_mean"), w(n + "running_var")},
             {{"epsilon", 1e-5}});
    }
    return c.relu ? op("Relu", {y}) : y;
  }
  // GroupNorm (32 groups, layers/norm.h), which opset 17 has no operator for: the channels in
  // groups as InstanceNormalization's "channels", then the per-channel affine map.
  std::string group_norm(const std::string& name, const std::string& x) {
    constexpr int64_t kGroups = 32;
    const at::Tensor gamma = p_.weights.at(name + ".weight"), beta = p_.weights.at(name + ".bias");
    const std::string grouped = op("Reshape", {x, i64({0, kGroups, -1})});
    const std::string normalized =
        op("InstanceNormalization",
           {grouped, g_.weight("group_norm.ones", at::ones({kGroups})),
            g_.weight("group_norm.zeros", at::zeros({kGroups}))},
           {{"epsilon", 1e-5}});
    const std::string y = op("Reshape", {normalized, op("Shape", {x})});
    return op("Add", {op("Mul", {y, g_.weight(name + ".weight", gamma.reshape({-1, 1, 1}))}),
                      g_.weight(name + ".bias", beta.reshape({-1, 1, 1}))});
  }
  std::string linear(const std::string& name, const std::string& x) {
    return op("Gemm", {x, w(name + ".weight"), w(name + ".bias")}, {{"transB", int64_t{1}}});
  }

  // ---- preprocessing and backbone -----------------------------------------------------------
  std::string preprocess(const std::string& image) {
    const auto channels = static_cast<int64_t>(p_.pixel_mean.size());
    const std::string mean = g_.weight("pixel_mean", at::tensor(p_.pixel_mean, at::kFloat).reshape({channels, 1, 1}));
    const std::string std = g_.weight("pixel_std", at::tensor(p_.pixel_std, at::kFloat).reshape({channels, 1, 1}));
    const std::string x = op("Div", {op("Sub", {to_float(image), mean}), std});
    const std::string d = i64({p_.size_divisibility});
    auto pad = [&](const std::string& size) {  // up to a multiple of d
      const std::string padded =
          op("Mul", {op("Div", {op("Add", {size, i64({p_.size_divisibility - 1})}), d}), d});
      return op("Sub", {padded, size});
    };
    const std::string pads = concat({i64({0, 0, 0, 0}), pad(dim(x, 1)), pad(dim(x, 2))}, 0);
    return unsqueeze(op("Pad", {x, pads}), {0});
  }

  std::map<std::string, std::string> backbone(std::string x) {
    std::map<std::string, std::string> bottom, out;
    x = conv(p_.resnet_stem, x);
    x = op("MaxPool", {x}, {{"kernel_shape", std::vector<int64_t>{3, 3}},
                            {"strides", std::vector<int64_t>{2, 2}},
                            {"pads", std::vector<int64_t>{1, 1, 1, 1}}});
    bottom["stem"] = x;
    for (size_t s = 0; s < p_.resnet_stages.size(); ++s) {
      for (int64_t b = 0; b < p_.resnet_blocks[s]; ++b)
        x = resnet_block(p_.resnet_stages[s] + "." + std::to_string(b), x);
      bottom[p_.resnet_stage_names[s]] = x;
    }
    const size_t n = p_.fpn_in.size();
    Names results(n);
    std::string prev = conv(p_.fpn_lateral[n - 1], bottom.at(p_.fpn_in[n - 1]));
    results[n - 1] = conv(p_.fpn_output[n - 1], prev);
    for (size_t i = n - 1; i-- > 0;) {
      const std::string up =
          op("Resize", {prev, "", g_.floats({1, 1, 2, 2})},
             {{"mode", std::string("nearest")},
              {"coordinate_transformation_mode", std::string("asymmetric")},
              {"nearest_mode", std::string("floor")}});
      prev = op("Add", {conv(p_.fpn_lateral[i], bottom.at(p_.fpn_in[i])), up});
      if (p_.fpn_fuse_avg) prev = op("Div", {prev, f(2)});
      results[i] = conv(p_.fpn_output[i], prev);
    }
    for (size_t i = 0; i < n; ++i) out[p_.fpn_out[i]] = results[i];
    if (p_.fpn_top_block == "max_pool") {
      out[p_.fpn_out[n]] = op("MaxPool", {results[n - 1]},
                              {{"kernel_shape", std::vector<int64_t>{1, 1}},
                               {"strides", std::vector<int64_t>{2, 2}}});
    } else {
      const std::string top_in =
          bottom.count(p_.fpn_top_in) ? bottom.at(p_.fpn_top_in) : out.at(p_.fpn_top_in);
      const std::string p6 = conv(p_.fpn_top_p6, top_in);
      out[p_.fpn_out[n]] = p6;
      out[p_.fpn_out[n + 1]] = conv(p_.fpn_top_p7, op("Relu", {p6}));
    }
    return out;
  }

  std::string resnet_block(const std::string& name, const std::string& x) {
    std::string out = conv(name + ".conv2", conv(name + ".conv1", x));
    if (p_.convs.count(name + ".conv3")) out = conv(name + ".conv3", out);
    const std::string shortcut = p_.convs.count(name + ".shortcut") ? conv(name + ".shortcut", x) : x;
    return op("Relu", {op("Add", {out, shortcut})});
  }

  // ---- boxes --------------------------------------------------------------------------------
  // deltas (N, 4k) applied to boxes (N, 4): (N, 4k), in Box2BoxTransform's order of operations.
  std::string apply_deltas(const std::string& deltas, const std::string& boxes,
                           const std::vector<double>& weights) {
    const std::string widths = op("Sub", {column(boxes, 2), column(boxes, 0)});
    const std::string heights = op("Sub", {column(boxes, 3), column(boxes, 1)});
    const std::string half = f(0.5);
    const std::string ctr_x = op("Add", {column(boxes, 0), op("Mul", {half, widths})});
    const std::string ctr_y = op("Add", {column(boxes, 1), op("Mul", {half, heights})});
    auto part = [&](int64_t j) {
      return op("Div", {slice(deltas, j, kEnd, 1, 4), f(static_cast<float>(weights[j]))});
    };
    const std::string clamp = f(static_cast<float>(p_.scale_clamp));
    const std::string dx = part(0), dy = part(1);
    const std::string dw = op("Min", {part(2), clamp}), dh = op("Min", {part(3), clamp});
    const std::string pred_ctr_x = op("Add", {op("Mul", {dx, widths}), ctr_x});
    const std::string pred_ctr_y = op("Add", {op("Mul", {dy, heights}), ctr_y});
    const std::string half_w = op("Mul", {half, op("Mul", {op("Exp", {dw}), widths})});
    const std::string half_h = op("Mul", {half, op("Mul", {op("Exp", {dh}), heights})});
    const Names corners = {op("Sub", {pred_ctr_x, half_w}), op("Sub", {pred_ctr_y, half_h}),
                           op("Add", {pred_ctr_x, half_w}), op("Add", {pred_ctr_y, half_h})};
    Names stacked;
    for (const auto& c : corners) stacked.push_back(unsqueeze(c, {2}));
    return op("Reshape", {concat(stacked, 2), op("Shape", {deltas})});
  }

  std::string clip(const std::string& boxes, const std::string& bounds) {
    return op("Min", {op("Max", {boxes, f(0)}), bounds});
  }

  std::string nonempty(const std::string& boxes, float threshold) {
    const std::string t = f(threshold);
    const std::string w_ok = op("Greater", {op("Sub", {column(boxes, 2), column(boxes, 0)}), t});
    const std::string h_ok = op("Greater", {op("Sub", {column(boxes, 3), column(boxes, 1)}), t});
    return squeeze(op("And", {w_ok, h_ok}), {1});
  }

  // Per-group greedy NMS (NonMaxSuppression with one class per group); kept indices by decreasing
  // score.
  std::string batched_nms(const std::string& boxes, const std::string& scores,
                          const std::string& groups, int64_t num_groups, double iou) {
    const std::string member =
        op("Equal", {unsqueeze(groups, {0}), unsqueeze(range(g_.scalar_int(num_groups)), {1})});
    const std::string none = f(-std::numeric_limits<float>::infinity());
    const std::string per_group = unsqueeze(op("Where", {member, unsqueeze(scores, {0}), none}), {0});
    const std::string selected =
        op("NonMaxSuppression", {unsqueeze(boxes, {0}), per_group, i64({int64_t{1} << 30}),
                                 g_.floats({static_cast<float>(iou)}),
                                 g_.floats({std::numeric_limits<float>::lowest()})});
    const std::string index = squeeze(column(selected, 2), {1});
    const std::string kept_scores = gather(scores, index);
    const std::string order =
        g_.nodes("TopK", {kept_scores, op("Shape", {kept_scores})}, 2,
                 {{"axis", int64_t{0}}, {"largest", int64_t{1}}, {"sorted", int64_t{1}}})[1];
    return gather(index, order);
  }

  std::string anchors(size_t level, const std::string& feature) {
    const auto stride = static_cast<float>(p_.anchor_strides[level]);
    auto shifts = [&](int64_t axis) {  // offset * stride + k * stride, k < the map's size
      const std::string k = to_float(range(scalar(dim(feature, axis))));
      return op("Add", {op("Mul", {k, f(stride)}), f(static_cast<float>(p_.anchor_offset) * stride)});
    };
    const std::string grid = concat({dim(feature, 2), dim(feature, 3)}, 0);
    const std::string sx = op("Reshape", {op("Expand", {unsqueeze(shifts(3), {0}), grid}), i64({-1, 1})});
    const std::string sy = op("Reshape", {op("Expand", {unsqueeze(shifts(2), {1}), grid}), i64({-1, 1})});
    const std::string all = concat({sx, sy, sx, sy}, 1);  // (H * W, 4)
    const std::string cells = g_.weight("anchor_generator.cell_anchors." + std::to_string(level),
                                        p_.cell_anchors[level].unsqueeze(0));
    return op("Reshape", {op("Add", {unsqueeze(all, {1}), cells}), i64({-1, 4})});
  }

  // (N, A * c, H, W) -> (H * W * A, c): position-major, then anchor, like the anchors.
  std::string per_anchor(const std::string& map, int64_t c) {
    const std::string shape = concat({i64({1, -1, c}), dim(map, 2), dim(map, 3)}, 0);
    const std::string moved = op("Transpose", {op("Reshape", {map, shape})},
                                 {{"perm", std::vector<int64_t>{0, 3, 4, 1, 2}}});
    return op("Reshape", {moved, i64({-1, c})});
  }

  // ---- RPN ----------------------------------------------------------------------------------
  std::string rpn(const std::map<std::string, std::string>& features, const std::string& bounds) {
    Names boxes, scores, levels;
    for (size_t level = 0; level < p_.rpn_in.size(); ++level) {
      const std::string feature = features.at(p_.rpn_in[level]);
      std::string t = feature;
      for (const auto& name : p_.rpn_convs) t = conv(name, t);
      const std::string logits =
          squeeze(per_anchor(conv("proposal_generator.rpn_head.objectness_logits", t), 1), {1});
      const std::string deltas = per_anchor(conv("proposal_generator.rpn_head.anchor_deltas", t), 4);
      const std::string proposals = apply_deltas(deltas, anchors(level, feature), p_.rpn_weights);
      const std::string k = op("Min", {op("Shape", {logits}), i64({p_.rpn_pre_topk})});
      const Names top = g_.nodes("TopK", {logits, k}, 2, {{"axis", int64_t{0}}});
      boxes.push_back(gather(proposals, top[1]));
      scores.push_back(top[0]);
      levels.push_back(op("ConstantOfShape", {k},
                          {{"value", at::full({1}, static_cast<int64_t>(level), at::kLong)}}));
    }
    const std::string raw = concat(boxes, 0), s = concat(scores, 0), l = concat(levels, 0);
    const std::string b = clip(raw, bounds);
    // Finite boxes and scores, larger than MIN_SIZE once clipped.
    auto not_finite = [&](const std::string& x) {
      return op("Or", {op("IsNaN", {x}), op("IsInf", {x})});
    };
    const std::string bad_box = op("ReduceMax", {to_float(not_finite(raw))},
                                   {{"axes", std::vector<int64_t>{1}}, {"keepdims", int64_t{0}}});
    const std::string finite = op("And", {op("Equal", {bad_box, f(0)}), op("Not", {not_finite(s)})});
    const std::string keep = op("And", {finite, nonempty(b, static_cast<float>(p_.rpn_min_size))});
    const std::string kept_boxes = rows(b, keep), kept_scores = rows(s, keep), kept_levels = rows(l, keep);
    const std::string order = batched_nms(kept_boxes, kept_scores, kept_levels,
                                          static_cast<int64_t>(p_.rpn_in.size()), p_.rpn_nms_thresh);
    return gather(kept_boxes, slice(order, 0, p_.rpn_post_topk, 0));
  }

  // ---- ROI heads ----------------------------------------------------------------------------
  // (R, C, res, res) features of boxes (R, 4), each pooled from the FPN level its size selects.
  std::string pool(const std::map<std::string, std::string>& features, const std::string& boxes,
                   const PoolerSpec& spec) {
    const std::vector<OnnxAttribute> settings = {
        {"output_height", spec.resolution}, {"output_width", spec.resolution},
        {"sampling_ratio", spec.sampling_ratio}, {"mode", std::string("avg")},
        {"coordinate_transformation_mode", std::string(spec.aligned ? "half_pixel" : "output_half_pixel")}};
    auto align = [&](size_t level, const std::string& rois) {
      auto attributes = settings;
      attributes.push_back({"spatial_scale", p_.roi_scales[level]});
      const std::string batch = op("ConstantOfShape", {dim(rois, 0)}, {{"value", at::zeros({1}, at::kLong)}});
      return op("RoiAlign", {features.at(p_.roi_in[level]), rois, batch}, attributes);
    };
    if (p_.roi_in.size() == 1) return align(0, boxes);
    // Level index: how many of the levels above the finest the box reaches, sqrt(area) / 224
    // against 2^(level - 4): floor(4 + log2(size / 224 + 1e-8)) without a log.
    const std::string area = op("Mul", {op("Sub", {column(boxes, 2), column(boxes, 0)}),
                                        op("Sub", {column(boxes, 3), column(boxes, 1)})});
    const std::string ratio = op("Add", {op("Div", {op("Sqrt", {area}), f(static_cast<float>(p_.roi_canonical_size))}), f(1e-8f)});
    std::string level = i64({0});
    for (int64_t l = p_.roi_min_level + 1; l <= p_.roi_max_level; ++l) {
      const float threshold = std::ldexp(1.0f, static_cast<int>(l - p_.roi_canonical_level));
      level = op("Add", {level, to_int(op("GreaterOrEqual", {ratio, f(threshold)}))});
    }
    level = squeeze(level, {1});
    const int64_t channels = p_.weights.at(p_.fpn_output.front() + ".weight").size(0);
    std::string out = op("ConstantOfShape",
                         {concat({dim(boxes, 0), i64({channels, spec.resolution, spec.resolution})}, 0)},
                         {{"value", at::zeros({1}, at::kFloat)}});
    for (size_t l = 0; l < p_.roi_in.size(); ++l) {
      const std::string members =
          op("NonZero", {op("Equal", {level, i64({static_cast<int64_t>(l)})})});  // (1, n)
      const std::string index = squeeze(members, {0});
      out = op("ScatterND", {out, op("Transpose", {members}), align(l, gather(boxes, index))});
    }
    return out;
  }

  std::pair<std::string, std::string> box_stage(const std::map<std::string, std::string>& features,
                                                const std::string& proposals, size_t stage) {
    std::string x = pool(features, proposals, p_.box);
    for (const auto& name : p_.box_head_convs[stage]) x = conv(name, x);
    x = op("Flatten", {x}, {{"axis", int64_t{1}}});
    for (const auto& name : p_.box_head_fcs[stage]) x = op("Relu", {linear(name, x)});
    const std::string& predictor = p_.box_predictors[stage];
    const std::string probs = op("Softmax", {linear(predictor + ".cls_score", x)}, {{"axis", int64_t{-1}}});
    const std::string boxes =
        apply_deltas(linear(predictor + ".bbox_pred", x), proposals, p_.box_reg_weights[stage]);
    return {probs, boxes};
  }

  Found roi_heads(const std::map<std::string, std::string>& features, const std::string& proposals,
                  const std::string& bounds) {
    auto [probs, boxes] = box_stage(features, proposals, 0);
    const size_t stages = p_.box_predictors.size();
    for (size_t k = 1; k < stages; ++k) {  // Cascade R-CNN: the previous stage's boxes, clipped
      auto [stage_probs, stage_boxes] = box_stage(features, clip(boxes, bounds), k);
      probs = op("Add", {probs, stage_probs});
      boxes = stage_boxes;
    }
    if (stages > 1) probs = op("Mul", {probs, f(static_cast<float>(1.0 / static_cast<double>(stages)))});
    Found found = fast_rcnn_inference(boxes, probs, bounds);
    if (p_.mask_on) found.masks = mask_head(features, found.boxes, found.classes);
    if (p_.keypoint_on) found.keypoints = keypoints(features, found.boxes);
    return found;
  }

  Found fast_rcnn_inference(const std::string& boxes, const std::string& probs, const std::string& bounds) {
    const std::string scores = slice(probs, 0, -1, 1);  // without the background
    const int64_t reg = p_.weights.at(p_.box_predictors.back() + ".bbox_pred.weight").size(0) / 4;
    const std::string clipped =
        op("Reshape", {clip(op("Reshape", {boxes, i64({-1, 4})}), bounds), i64({-1, reg, 4})});
    const std::string candidates = op("Transpose", {op("NonZero", {op("Greater", {scores, f(static_cast<float>(p_.score_thresh))})})});
    const std::string classes = squeeze(column(candidates, 1), {1});
    const std::string kept_boxes =
        reg == 1 ? gather(squeeze(slice(clipped, 0, 1, 1), {1}), squeeze(column(candidates, 0), {1}))
                 : op("GatherND", {clipped, candidates});
    const std::string kept_scores = op("GatherND", {scores, candidates});
    const std::string order = slice(
        batched_nms(kept_boxes, kept_scores, classes, p_.num_classes, p_.nms_thresh), 0,
        p_.detections_per_image, 0);
    return {gather(kept_boxes, order), gather(kept_scores, order), gather(classes, order), "", ""};
  }

  std::string mask_head(const std::map<std::string, std::string>& features, const std::string& boxes,
                        const std::string& classes) {
    std::string x = pool(features, boxes, p_.mask);
    for (const auto& name : p_.mask_convs) x = conv(name, x);
    x = op("Relu", {conv("roi_heads.mask_head.deconv", x)});
    const std::string logits = conv("roi_heads.mask_head.predictor", x);  // (R, K or 1, M, M)
    if (p_.weights.at("roi_heads.mask_head.predictor.weight").size(0) == 1)
      return squeeze(op("Sigmoid", {logits}), {1});
    const std::string rows = unsqueeze(range(scalar(dim(boxes, 0))), {1});
    return op("Sigmoid", {op("GatherND", {logits, concat({rows, unsqueeze(classes, {1})}, 1)})});
  }

  std::string keypoint_heatmaps(const std::map<std::string, std::string>& features, const std::string& boxes) {
    std::string x = pool(features, boxes, p_.keypoint);
    for (const auto& name : p_.keypoint_convs) x = conv(name, x);
    x = conv("roi_heads.keypoint_head.score_lowres", x);
    return op("Resize", {x, "", g_.floats({1, 1, 2, 2})},
              {{"mode", std::string("linear")},
               {"coordinate_transformation_mode", std::string("half_pixel")}});
  }

  // Detectron2's heatmaps_to_keypoints: per box, its heatmaps resized (bicubic) to the box's
  // size, the argmax of each; x, y in the image and the softmax score at the argmax. One Loop
  // iteration per box (the sizes differ).
  std::string keypoints(const std::map<std::string, std::string>& features, const std::string& boxes) {
    const std::string maps = keypoint_heatmaps(features, boxes);  // (R, K, S, S)
    const int64_t num_keypoints = p_.weights.at("roi_heads.keypoint_head.score_lowres.weight").size(1);
    const std::string one = f(1);
    const std::string widths = op("Max", {op("Sub", {column(boxes, 2), column(boxes, 0)}), one});
    const std::string heights = op("Max", {op("Sub", {column(boxes, 3), column(boxes, 1)}), one});
    const std::string widths_ceil = op("Ceil", {widths}), heights_ceil = op("Ceil", {heights});
    const std::string width_corr = op("Div", {widths, widths_ceil});
    const std::string height_corr = op("Div", {heights, heights_ceil});
    const std::string out_w = squeeze(to_int(widths_ceil), {1}), out_h = squeeze(to_int(heights_ceil), {1});

    auto body = std::make_shared<OnnxGraph>("kp");
    OnnxGraph& b = *body;
    const std::string i = b.body_input("kp_i", OnnxType::kInt64, 0);
    const std::string cond = b.body_input("kp_cond", OnnxType::kBool, 0);
    auto bop = [&](const std::string& type, const Names& in, const std::vector<OnnxAttribute>& a = {}) {
      return b.node(type, in, a);
    };
    const std::string at = bop("Unsqueeze", {i, b.ints({0})});
    auto pick = [&](const std::string& values) { return bop("Gather", {values, at}, {{"axis", int64_t{0}}}); };
    const std::string map = pick(maps);  // (1, K, S, S)
    const std::string h = pick(out_h), w_ = pick(out_w);
    const std::string sizes = bop("Concat", {b.ints({1, num_keypoints}), h, w_}, {{"axis", int64_t{0}}});
    const std::string resized =
        bop("Resize", {map, "", "", sizes},
            {{"mode", std::string("cubic")}, {"cubic_coeff_a", -0.75},
             {"coordinate_transformation_mode", std::string("half_pixel")}});
    const std::string flat = bop("Reshape", {resized, b.ints({num_keypoints, -1})});
    const std::string pos = bop("ArgMax", {flat}, {{"axis", int64_t{1}}, {"keepdims", int64_t{0}}});
    const std::string best = bop("ReduceMax", {flat}, {{"axes", std::vector<int64_t>{1}}, {"keepdims", int64_t{0}}});
    const std::string shifted =
        bop("Exp", {bop("Sub", {bop("Squeeze", {map, b.ints({0})}), bop("Reshape", {best, b.ints({num_keypoints, 1, 1})})})});
    const std::string score = bop("Reciprocal", {bop("ReduceSum", {shifted, b.ints({1, 2})}, {{"keepdims", int64_t{0}}})});
    const std::string x_int = bop("Mod", {pos, w_});
    const std::string y_int = bop("Div", {bop("Sub", {pos, x_int}), w_});
    const std::string half = b.scalar_float(0.5f);
    auto coordinate = [&](const std::string& index, const std::string& corr, int64_t offset_column) {
      const std::string cell = bop("Add", {bop("Cast", {index}, {{"to", int64_t{1}}}), half});
      return bop("Add", {bop("Mul", {cell, pick(squeeze(corr, {1}))}), pick(squeeze(column(boxes, offset_column), {1}))});
    };
    const std::string x = coordinate(x_int, width_corr, 0), y = coordinate(y_int, height_corr, 1);
    Names columns;
    for (const auto& c : {x, y, score}) columns.push_back(bop("Unsqueeze", {c, b.ints({1})}));
    const std::string row = bop("Concat", columns, {{"axis", int64_t{1}}});  // (K, 3)
    b.output(cond, "kp_cond_out", OnnxType::kBool, 0);
    b.output(row, "kp_row", OnnxType::kFloat, 2);
    return op("Loop", {scalar(dim(boxes, 0)), ""}, {{"body", body}});
  }

  // ---- RetinaNet ----------------------------------------------------------------------------
  Found retinanet(const std::map<std::string, std::string>& features, const std::string& /*bounds*/) {
    const int64_t classes_n = p_.num_classes;
    Names boxes, scores, classes;
    for (size_t level = 0; level < p_.retinanet_in.size(); ++level) {
      const std::string feature = features.at(p_.retinanet_in[level]);
      std::string c = feature, b = feature;
      for (const auto& name : p_.retinanet_cls_convs) c = op("Relu", {conv(name, c)});
      for (const auto& name : p_.retinanet_bbox_convs) b = op("Relu", {conv(name, b)});
      const std::string logits = per_anchor(conv("head.cls_score", c), classes_n);
      const std::string deltas = per_anchor(conv("head.bbox_pred", b), 4);
      const std::string flat = op("Sigmoid", {op("Reshape", {logits, i64({-1})})});
      std::string candidates = where(op("Greater", {flat, f(static_cast<float>(p_.score_thresh))}));
      const std::string k = op("Min", {op("Shape", {candidates}), i64({p_.retinanet_topk_candidates})});
      const Names top = g_.nodes("TopK", {gather(flat, candidates), k}, 2, {{"axis", int64_t{0}}});
      candidates = gather(candidates, top[1]);
      const std::string anchor = op("Div", {candidates, i64({classes_n})});
      boxes.push_back(apply_deltas(gather(deltas, anchor), gather(anchors(level, feature), anchor),
                                   p_.retinanet_weights));
      scores.push_back(top[0]);
      classes.push_back(op("Mod", {candidates, i64({classes_n})}));
    }
    const std::string b = concat(boxes, 0), s = concat(scores, 0), c = concat(classes, 0);
    const std::string order = slice(batched_nms(b, s, c, classes_n, p_.nms_thresh), 0, p_.detections_per_image, 0);
    return {gather(b, order), gather(s, order), gather(c, order), "", ""};
  }

  // ---- postprocessing -----------------------------------------------------------------------
  // The detections in original_size's pixels, as graph outputs; returns them (masks: (R, H, W)
  // bool) for the panoptic combination.
  Found postprocess(const Found& found, const std::string& in_h, const std::string& in_w,
                    const std::string& original) {
    const std::string out_h = slice(original, 0, 1, 0), out_w = slice(original, 1, 2, 0);
    const std::string scale_x = op("Div", {to_float(out_w), to_float(in_w)});
    const std::string scale_y = op("Div", {to_float(out_h), to_float(in_h)});
    const std::string scaled = op("Mul", {found.boxes, concat({scale_x, scale_y, scale_x, scale_y}, 0)});
    const std::string boxes = clip(scaled, limits(out_h, out_w));
    const std::string keep = where(nonempty(boxes, 0.0f));
    Found final{gather(boxes, keep), gather(found.scores, keep), gather(found.classes, keep), "",
                ""};
    g_.output(final.boxes, "pred_boxes", OnnxType::kFloat, 2);
    g_.output(final.scores, "scores", OnnxType::kFloat, 1);
    g_.output(final.classes, "pred_classes", OnnxType::kInt64, 1);
    if (!found.masks.empty()) {
      final.masks = paste_masks(gather(found.masks, keep), final.boxes, out_h, out_w);
      g_.output(final.masks, "pred_masks", OnnxType::kBool, 3);
    }
    if (!found.keypoints.empty()) {
      const std::string scale = concat({scale_x, scale_y, g_.floats({1})}, 0);
      final.keypoints = op("Mul", {gather(found.keypoints, keep), scale});
      g_.output(final.keypoints, "pred_keypoints", OnnxType::kFloat, 3);
    }
    return final;
  }

  // ---- semantic head (SemSegFPNHead) and PanopticFPN's combination --------------------------
  // F.interpolate(scale_factor=scale, mode="bilinear", align_corners=False).
  std::string upsample_by(const std::string& x, int64_t scale) {
    const auto s = static_cast<float>(scale);
    return op("Resize", {x, "", g_.floats({1, 1, s, s})},
              {{"mode", std::string("linear")},
               {"coordinate_transformation_mode", std::string("half_pixel")}});
  }

  // (C, height, width) logits: the head's sum over its inputs, the predictor, the COMMON_STRIDE
  // upsampling to the padded input, then Detectron2's sem_seg_postprocess (cropped to the
  // input's size, resized bilinearly to original_size).
  std::string sem_seg(const std::map<std::string, std::string>& features, const std::string& in_h,
                      const std::string& in_w, const std::string& original) {
    std::string total;
    for (size_t k = 0; k < p_.sem_seg_in.size(); ++k) {
      std::string x = features.at(p_.sem_seg_in[k]);
      for (const auto& name : p_.sem_seg_convs[k]) {
        x = conv(name, x);
        if (p_.sem_seg_upsample[k]) x = upsample_by(x, 2);
      }
      total = total.empty() ? x : op("Add", {total, x});
    }
    const std::string logits =
        upsample_by(conv("sem_seg_head.predictor", total), p_.sem_seg_common_stride);
    const std::string cropped =
        op("Slice", {logits, i64({0, 0}), concat({in_h, in_w}, 0), i64({2, 3})});
    const std::string sizes = concat({i64({1, p_.sem_seg_num_classes}), original}, 0);
    const std::string resized = op("Resize", {cropped, "", "", sizes},
                                   {{"mode", std::string("linear")},
                                    {"coordinate_transformation_mode", std::string("half_pixel")}});
    return squeeze(resized, {0});
  }

  // Detectron2's combine_semantic_and_instance_outputs, as detkit's C++
  // (modeling/meta_arch/panoptic_combine.cpp): the instances by decreasing score (TopK: ties by
  // index, a stable order), each placed while its score reaches INSTANCES_CONFIDENCE_THRESH
  // unless more than OVERLAP_THRESH of its mask is taken (then on its free pixels only): a Loop
  // over the instances whose state is the id map and the last id. Scores are sorted, so "stop at
  // the first below the threshold" is "skip every one below it". Then each semantic label but 0
  // (the "things" class) present in `labels` (H, W) on the pixels left, kept when they reach
  // STUFF_AREA_LIMIT: unrolled over the head's classes. Comparisons in double, as the C++ makes
  // them. Outputs panoptic_seg (H, W) int32 and segments_info (S, 5) int64.
  void combine(const Found& found, const std::string& labels) {
    const std::string zero_ids =
        op("ConstantOfShape", {op("Shape", {labels})}, {{"value", at::zeros({1}, at::kInt)}});
    const std::string order =
        g_.nodes("TopK", {found.scores, op("Shape", {found.scores})}, 2,
                 {{"axis", int64_t{0}}, {"largest", int64_t{1}}, {"sorted", int64_t{1}}})[1];

    auto body = std::make_shared<OnnxGraph>("pan");
    OnnxGraph& b = *body;
    auto bop = [&](const std::string& type, const Names& in,
                   const std::vector<OnnxAttribute>& a = {}) { return b.node(type, in, a); };
    auto count = [&](const std::string& mask) {  // 0-d int64: the true pixels of a bool map
      return bop("ReduceSum", {bop("Cast", {mask}, {{"to", int64_t{7}}})},
                 {{"keepdims", int64_t{0}}});
    };
    auto to_double = [&](const std::string& x) { return bop("Cast", {x}, {{"to", int64_t{11}}}); };
    const std::string i = b.body_input("pan_i", OnnxType::kInt64, 0);
    const std::string cond = b.body_input("pan_cond", OnnxType::kBool, 0);
    const std::string ids = b.body_input("pan_ids", OnnxType::kInt32, 2);
    const std::string last = b.body_input("pan_last", OnnxType::kInt64, 0);
    const std::string instance = bop("Gather", {order, i}, {{"axis", int64_t{0}}});  // 0-d
    const std::string mask =
        bop("Squeeze", {bop("Gather", {found.masks, bop("Unsqueeze", {instance, b.ints({0})})},
                            {{"axis", int64_t{0}}}),
                        b.ints({0})});
    const std::string score = bop("Gather", {found.scores, instance}, {{"axis", int64_t{0}}});
    const std::string confident =
        bop("GreaterOrEqual",
            {to_double(score), b.scalar_double(p_.combine_instances_confidence_thresh)});
    const std::string area = count(mask);
    const std::string taken =
        bop("Greater", {ids, b.node("Constant", {}, {{"value", at::scalar_tensor(0, at::kInt)}})});
    const std::string intersect = count(bop("And", {mask, taken}));
    const std::string overlap = bop("Div", {to_double(intersect), to_double(area)});
    const std::string keep = bop(
        "And",
        {confident,
         bop("And", {bop("Greater", {area, b.scalar_int(0)}),
                     bop("Not", {bop("Greater",
                                     {overlap, b.scalar_double(p_.combine_overlap_thresh)})})})});
    const std::string id = bop("Add", {last, bop("Cast", {keep}, {{"to", int64_t{7}}})});
    const std::string place = bop("And", {bop("And", {mask, bop("Not", {taken})}), keep});
    const std::string new_ids = bop("Where", {place, bop("Cast", {id}, {{"to", int64_t{6}}}), ids});
    b.output(cond, "pan_cond_out", OnnxType::kBool, 0);
    b.output(new_ids, "pan_ids_out", OnnxType::kInt32, 2);
    b.output(id, "pan_last_out", OnnxType::kInt64, 0);
    b.output(keep, "pan_keep", OnnxType::kBool, 0);
    b.output(id, "pan_id", OnnxType::kInt64, 0);
    b.output(instance, "pan_instance", OnnxType::kInt64, 0);
    b.output(count(place), "pan_area", OnnxType::kInt64, 0);
    const Names loop =
        g_.nodes("Loop", {scalar(dim(found.scores, 0)), "", zero_ids, g_.scalar_int(0)}, 6,
                 {{"body", body}});
    std::string panoptic = loop[0], last_id = loop[1];
    const std::string thing_keep = loop[2];
    auto column_of = [&](const std::string& v) { return unsqueeze(v, {1}); };  // (R) -> (R, 1)
    const std::string things = rows(
        concat({column_of(loop[3]), column_of(op("Expand", {i64({1}), dim(loop[3], 0)})),
                column_of(gather(found.classes, loop[4])), column_of(loop[4]), column_of(loop[5])},
               1),
        thing_keep);

    Names stuff, stuff_keep;
    const std::string none = g_.scalar_int(0);
    for (int64_t label = 1; label < p_.sem_seg_num_classes; ++label) {
      const std::string is_label = op("Equal", {labels, g_.scalar_int(label)});
      auto pixels = [&](const std::string& m) {
        return op("ReduceSum", {to_int(m)}, {{"keepdims", int64_t{0}}});
      };
      const std::string present = op("Greater", {pixels(is_label), none});
      const std::string free = op(
          "And",
          {is_label, op("Equal", {panoptic, g_.weight("panoptic.void", at::zeros({}, at::kInt))})});
      const std::string area = pixels(free);
      const std::string keep = op(
          "And", {present, op("GreaterOrEqual", {op("Cast", {area}, {{"to", int64_t{11}}}),
                                                 g_.scalar_double(p_.combine_stuff_area_limit)})});
      last_id = op("Add", {last_id, to_int(keep)});
      panoptic = op("Where", {op("And", {free, keep}), op("Cast", {last_id}, {{"to", int64_t{6}}}),
                              panoptic});
      stuff.push_back(unsqueeze(
          concat({unsqueeze(last_id, {0}), i64({0, label, -1}), unsqueeze(area, {0})}, 0), {0}));
      stuff_keep.push_back(unsqueeze(keep, {0}));
    }
    std::string segments = things;
    if (!stuff.empty())
      segments = concat({things, rows(concat(stuff, 0), concat(stuff_keep, 0))}, 0);
    g_.output(panoptic, "panoptic_seg", OnnxType::kInt32, 2);
    g_.output(segments, "segments_info", OnnxType::kInt64, 2);
  }

  // Detectron2's paste (grid_sample, bilinear, zeros outside, align_corners False) written as
  // what it is on an axis-aligned grid: per box, (H, M) row weights x the (M, M) mask x (M, W)
  // column weights, each weight the bilinear tent max(0, 1 - |u - j|) at the pixel centre's
  // position u in the mask. Memory (R, H, W), not grid_sample's (R, H, W, 2) grid.
  std::string paste_masks(const std::string& masks, const std::string& boxes, const std::string& out_h,
                          const std::string& out_w) {
    const int64_t m = p_.mask.resolution * p_.convs.at("roi_heads.mask_head.deconv").stride;
    const std::string cells = to_float(range(g_.scalar_int(m)));
    auto weights = [&](const std::string& size, int64_t lo, int64_t hi) {  // (R, size, M)
      const std::string centres = op("Add", {to_float(range(scalar(size))), f(0.5)});  // (size)
      const std::string start = column(boxes, lo), extent = op("Sub", {column(boxes, hi), start});
      const std::string g = op("Sub", {op("Mul", {op("Div", {op("Sub", {centres, start}), extent}), f(2)}), f(1)});
      const std::string u = op("Div", {op("Sub", {op("Mul", {op("Add", {g, f(1)}), f(static_cast<float>(m))}), f(1)}), f(2)});
      return op("Relu", {op("Sub", {f(1), op("Abs", {op("Sub", {unsqueeze(u, {2}), cells})})})});
    };
    const std::string rows = weights(out_h, 1, 3), columns = weights(out_w, 0, 2);
    const std::string image = op("MatMul", {op("MatMul", {rows, masks}),
                                            op("Transpose", {columns}, {{"perm", std::vector<int64_t>{0, 2, 1}}})});
    return op("GreaterOrEqual", {image, f(0.5)});
  }

  const ExportPlan& p_;
  OnnxGraph g_;
};

}  // namespace

std::string export_onnx(torch::nn::Module& model, const config::CfgNode& cfg) {
  const ExportPlan plan = plan_export(model, cfg);
  return OnnxWriter(plan).write();
}

}  // namespace detkit::export_

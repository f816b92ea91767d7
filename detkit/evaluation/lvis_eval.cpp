#include "detkit/evaluation/lvis_eval.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <numeric>

#include "detkit/evaluation/numpy_sum.h"
#include "detkit/utils/error.h"

namespace detkit::evaluation {

namespace {

// np.mean(v), or -1 (lvis-api's) where nothing is defined.
double lvis_mean(const std::vector<double>& v) { return v.empty() ? -1.0 : numpy_mean(v); }

bool in_play(double area) { return area > 0 && area < std::numeric_limits<double>::infinity(); }

}  // namespace

LVISEval::LVISEval(const LvisGroundTruth& gt, std::vector<EvalObject> detections, IouType iou_type,
                   LvisEvalParams params)
    : gt_(gt), dts_(std::move(detections)), iou_type_(iou_type), params_(std::move(params)) {
  if (iou_type_ == IouType::Keypoints) throw Error("LVISEval: iou type must be bbox or segm");
  if (params_.area_ranges.size() != params_.area_labels.size())
    throw Error("LVISEval: area_ranges and area_labels differ in length");
  const size_t I = gt_.images.size();
  auto image_index = [&](int64_t id) -> std::optional<size_t> {
    const LvisImage* im = gt_.find_image(id);
    return im ? std::optional<size_t>(im - gt_.images.data()) : std::nullopt;
  };
  auto category_index = [&](int64_t id) -> std::optional<size_t> {
    auto it = std::lower_bound(gt_.categories.begin(), gt_.categories.end(), id,
                               [](const LvisCategory& c, int64_t v) { return c.id < v; });
    if (it == gt_.categories.end() || it->id != id) return std::nullopt;
    return static_cast<size_t>(it - gt_.categories.begin());
  };
  // Categories per image: annotated (ground truth in play), negative, not exhaustive.
  std::vector<std::vector<size_t>> present(I), negative(I);
  not_exhaustive_.resize(I);
  for (size_t i = 0; i < I; ++i) {
    not_exhaustive_[i] = gt_.images[i].not_exhaustive_category_ids;
    std::sort(not_exhaustive_[i].begin(), not_exhaustive_[i].end());
    for (int64_t c : gt_.images[i].neg_category_ids)
      if (auto k = category_index(c)) negative[i].push_back(*k);
    std::sort(negative[i].begin(), negative[i].end());
  }
  for (size_t g = 0; g < gt_.annotations.size(); ++g) {
    const EvalObject& a = gt_.annotations[g];
    auto i = image_index(a.image_id);
    auto k = category_index(a.category_id);
    if (!i || !k || !in_play(a.area)) continue;
    gts_by_[{*i, *k}].push_back(g);
    present[*i].push_back(*k);
    ++num_gts_;
  }
  for (auto& p : present) {
    std::sort(p.begin(), p.end());
    p.erase(std::unique(p.begin(), p.end()), p.end());
  }
  for (size_t d = 0; d < dts_.size(); ++d) {
    const EvalObject& o = dts_[d];
    auto i = image_index(o.image_id);
    auto k = category_index(o.category_id);
    if (!i || !k || !in_play(o.area)) continue;
    // The federated rule: only categories known present or absent on the image.
    if (!std::binary_search(present[*i].begin(), present[*i].end(), *k) &&
        !std::binary_search(negative[*i].begin(), negative[*i].end(), *k))
      continue;
    dts_by_[{*i, *k}].push_back(d);
    ++num_dts_evaluated_;
  }
}

LVISEval::Pair LVISEval::gather(size_t image, size_t category) const {
  Pair pair;
  if (auto it = gts_by_.find({image, category}); it != gts_by_.end()) pair.gt = it->second;
  if (auto it = dts_by_.find({image, category}); it != dts_by_.end()) pair.dt = it->second;
  std::stable_sort(pair.dt.begin(), pair.dt.end(),
                   [&](size_t a, size_t b) { return dts_[a].score > dts_[b].score; });
  if (pair.gt.empty() || pair.dt.empty()) return pair;
  const std::vector<bool> crowd(pair.gt.size(), false);
  if (iou_type_ == IouType::Segm) {
    std::vector<mask_ops::RLE> d, g;
    for (size_t i : pair.dt) d.push_back(dts_[i].rle);
    for (size_t i : pair.gt) g.push_back(gt_.annotations[i].rle);
    pair.ious = mask_ops::iou(d, g, crowd);
  } else {
    std::vector<std::array<double, 4>> d, g;
    for (size_t i : pair.dt) d.push_back(dts_[i].bbox);
    for (size_t i : pair.gt) g.push_back(gt_.annotations[i].bbox);
    pair.ious = mask_ops::box_iou(d, g, crowd);
  }
  return pair;
}

LVISEval::ImageEval LVISEval::evaluate_image(const Pair& pair, size_t image,
                                             const std::array<double, 2>& area_range) const {
  auto outside = [&](double area) { return area < area_range[0] || area > area_range[1]; };
  const size_t T = params_.iou_thresholds.size(), G = pair.gt.size(), D = pair.dt.size();
  std::vector<uint8_t> ignore_of(G);
  for (size_t j = 0; j < G; ++j)
    ignore_of[j] = gt_.annotation_ignore[pair.gt[j]] || outside(gt_.annotations[pair.gt[j]].area);
  std::vector<size_t> gt_order(G);
  std::iota(gt_order.begin(), gt_order.end(), 0);
  std::stable_sort(gt_order.begin(), gt_order.end(),
                   [&](size_t a, size_t b) { return ignore_of[a] < ignore_of[b]; });
  ImageEval e;
  e.dt_matches.assign(T * D, 0);
  e.dt_ignore.assign(T * D, 0);
  for (size_t j : gt_order) e.gt_ignore.push_back(ignore_of[j]);
  for (size_t d : pair.dt) e.dt_scores.push_back(dts_[d].score);
  std::vector<int64_t> gt_matched(T * G, 0);
  if (!pair.ious.empty()) {
    for (size_t t = 0; t < T; ++t) {
      for (size_t d = 0; d < D; ++d) {
        double best = std::min(params_.iou_thresholds[t], 1 - 1e-10);
        long m = -1;
        for (size_t gi = 0; gi < G; ++gi) {
          if (gt_matched[t * G + gi] > 0) continue;
          // Matched a regular ground truth already; the rest are ignored ones: stop.
          if (m > -1 && e.gt_ignore[m] == 0 && e.gt_ignore[gi] == 1) break;
          const double iou = pair.ious[d * G + gt_order[gi]];
          if (iou < best) continue;
          best = iou;
          m = static_cast<long>(gi);
        }
        if (m == -1) continue;
        e.dt_ignore[t * D + d] = e.gt_ignore[m];
        e.dt_matches[t * D + d] = gt_.annotations[pair.gt[gt_order[m]]].id;
        gt_matched[t * G + m] = dts_[pair.dt[d]].id;
      }
    }
  }
  // Unmatched detections are ignored outside the area range, and for categories the image is not
  // exhaustively annotated for.
  const auto& nel = not_exhaustive_[image];
  for (size_t d = 0; d < D; ++d) {
    const EvalObject& o = dts_[pair.dt[d]];
    if (!outside(o.area) && !std::binary_search(nel.begin(), nel.end(), o.category_id)) continue;
    for (size_t t = 0; t < T; ++t)
      if (e.dt_matches[t * D + d] == 0) e.dt_ignore[t * D + d] = 1;
  }
  return e;
}

void LVISEval::evaluate() {
  const size_t K = gt_.categories.size(), A = params_.area_ranges.size();
  evals_.assign(K * A, {});
  // Only the (image, category) pairs with ground truth or detections, by image then category,
  // so that each category's evaluations come in image order.
  std::vector<std::pair<size_t, size_t>> gt_keys, dt_keys, keys;
  for (const auto& entry : gts_by_) gt_keys.push_back(entry.first);
  for (const auto& entry : dts_by_) dt_keys.push_back(entry.first);
  std::set_union(gt_keys.begin(), gt_keys.end(), dt_keys.begin(), dt_keys.end(),
                 std::back_inserter(keys));
  for (const auto& [i, k] : keys) {
    const Pair pair = gather(i, k);
    for (size_t a = 0; a < A; ++a)
      evals_[k * A + a].push_back(evaluate_image(pair, i, params_.area_ranges[a]));
  }
  evaluated_ = true;
  accumulated_ = false;
}

size_t LVISEval::precision_index(size_t t, size_t r, size_t k, size_t a) const {
  const size_t R = params_.recall_thresholds.size(), K = gt_.categories.size(),
               A = params_.area_ranges.size();
  return ((t * R + r) * K + k) * A + a;
}

void LVISEval::accumulate() {
  if (!evaluated_) evaluate();
  const size_t T = params_.iou_thresholds.size(), R = params_.recall_thresholds.size();
  const size_t K = gt_.categories.size(), A = params_.area_ranges.size();
  precision_.assign(T * R * K * A, -1.0);
  recall_.assign(T * K * A, -1.0);
  const double eps = std::numeric_limits<double>::epsilon();  // np.spacing(1)
  for (size_t k = 0; k < K; ++k) {
    for (size_t a = 0; a < A; ++a) {
      // Every image's detections (image order), then stably sorted by score.
      std::vector<double> scores;
      std::vector<std::pair<const ImageEval*, size_t>> where;  // (image eval, column)
      size_t num_gt = 0;
      for (const ImageEval& e : evals_[k * A + a]) {
        for (size_t d = 0; d < e.dt_scores.size(); ++d) {
          scores.push_back(e.dt_scores[d]);
          where.emplace_back(&e, d);
        }
        for (uint8_t ig : e.gt_ignore) num_gt += ig == 0;
      }
      if (num_gt == 0) continue;
      std::vector<size_t> order(scores.size());
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(),
                       [&](size_t x, size_t y) { return scores[x] > scores[y]; });
      const size_t nd = order.size();
      for (size_t t = 0; t < T; ++t) {
        std::vector<double> rc(nd), pr(nd);
        double tp = 0, fp = 0;
        for (size_t j = 0; j < nd; ++j) {
          const auto& [e, d] = where[order[j]];
          const size_t D = e->dt_scores.size();
          const bool matched = e->dt_matches[t * D + d] != 0;
          const bool ignored = e->dt_ignore[t * D + d] != 0;
          tp += matched && !ignored;
          fp += !matched && !ignored;
          rc[j] = tp / static_cast<double>(num_gt);
          pr[j] = tp / (fp + tp + eps);
        }
        recall_[(t * K + k) * A + a] = nd ? rc[nd - 1] : 0.0;
        for (size_t j = nd; j-- > 1;)
          if (pr[j] > pr[j - 1]) pr[j - 1] = pr[j];
        // Precision at each recall threshold; zeros from the first threshold past the last
        // recall reached (lvis-api's try/except around the lookup).
        bool past_end = false;
        for (size_t r = 0; r < R; ++r) {
          const size_t pos =
              std::lower_bound(rc.begin(), rc.end(), params_.recall_thresholds[r]) - rc.begin();
          past_end = past_end || pos >= nd;
          precision_[precision_index(t, r, k, a)] = past_end ? 0.0 : pr[pos];
        }
      }
    }
  }
  accumulated_ = true;
}

double LVISEval::summarize_one(bool ap, std::optional<double> iou_threshold,
                               const std::string& area, std::optional<char> frequency) const {
  const size_t T = params_.iou_thresholds.size(), R = params_.recall_thresholds.size();
  const size_t K = gt_.categories.size(), A = params_.area_ranges.size();
  std::vector<double> values;  // the selected entries > -1, in numpy's C order (t, r, k)
  for (size_t t = 0; t < T; ++t) {
    if (iou_threshold && params_.iou_thresholds[t] != *iou_threshold) continue;
    for (size_t r = 0; r < (ap ? R : 1); ++r)
      for (size_t k = 0; k < K; ++k) {
        if (frequency && gt_.categories[k].frequency != *frequency) continue;
        for (size_t a = 0; a < A; ++a) {
          if (params_.area_labels[a] != area) continue;
          const double v =
              ap ? precision_[precision_index(t, r, k, a)] : recall_[(t * K + k) * A + a];
          if (v > -1) values.push_back(v);
        }
      }
  }
  return lvis_mean(values);
}

void LVISEval::summarize() {
  if (!accumulated_) throw Error("LVISEval: call accumulate() before summarize()");
  const std::nullopt_t all = std::nullopt;
  results_.clear();
  results_.emplace_back("AP", summarize_one(true, all, "all", all));
  results_.emplace_back("AP50", summarize_one(true, 0.5, "all", all));
  results_.emplace_back("AP75", summarize_one(true, 0.75, "all", all));
  results_.emplace_back("APs", summarize_one(true, all, "small", all));
  results_.emplace_back("APm", summarize_one(true, all, "medium", all));
  results_.emplace_back("APl", summarize_one(true, all, "large", all));
  results_.emplace_back("APr", summarize_one(true, all, "all", 'r'));
  results_.emplace_back("APc", summarize_one(true, all, "all", 'c'));
  results_.emplace_back("APf", summarize_one(true, all, "all", 'f'));
  const std::string at = "@" + std::to_string(params_.max_dets);
  results_.emplace_back("AR" + at, summarize_one(false, all, "all", all));
  for (const char* area : {"small", "medium", "large"})
    results_.emplace_back("AR" + std::string(1, area[0]) + at,
                          summarize_one(false, all, area, all));
}

void LVISEval::run() {
  evaluate();
  accumulate();
  summarize();
}

double LVISEval::result(const std::string& key) const {
  for (const auto& [k, v] : results_)
    if (k == key) return v;
  throw Error("LVISEval: no result '" + key + "' (call run() first)");
}

std::map<int64_t, std::optional<double>> LVISEval::per_category_ap() const {
  if (!accumulated_) throw Error("LVISEval: call accumulate() first");
  std::map<int64_t, std::optional<double>> out;
  const size_t T = params_.iou_thresholds.size(), R = params_.recall_thresholds.size();
  for (size_t k = 0; k < gt_.categories.size(); ++k) {
    std::vector<double> values;
    for (size_t t = 0; t < T; ++t)
      for (size_t r = 0; r < R; ++r) {
        const double v = precision_[precision_index(t, r, k, 0)];
        if (v > -1) values.push_back(v);
      }
    out[gt_.categories[k].id] =
        values.empty() ? std::nullopt : std::optional<double>(lvis_mean(values));
  }
  return out;
}

std::string LVISEval::results_text() const {
  std::string out;
  for (const auto& [key, value] : results_) {
    const bool ap = key.find("AP") != std::string::npos;
    const char c = key.size() > 2 ? key[2] : '\0';
    std::string iou;
    if (c >= '0' && c <= '9') {
      iou = fmt::format("{:0.2f}", std::stod(key.substr(2)) / 100);
    } else {
      iou = fmt::format("{:0.2f}:{:0.2f}", params_.iou_thresholds.front(),
                        params_.iou_thresholds.back());
    }
    const std::string group = (c == 'r' || c == 'c' || c == 'f') ? std::string(1, c) : "all";
    const std::string area = (c == 's' || c == 'm' || c == 'l') ? std::string(1, c) : "all";
    out += fmt::format(
        " {:<18} {} @[ IoU={:<9} | area={:>6} | maxDets={:>3} catIds={:>3}] = {:0.3f}\n",
        ap ? "Average Precision" : "Average Recall", ap ? "(AP)" : "(AR)", iou, area,
        params_.max_dets, group, value);
  }
  return out;
}

}  // namespace detkit::evaluation

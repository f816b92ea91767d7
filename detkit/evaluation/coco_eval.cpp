#include "detkit/evaluation/coco_eval.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numeric>

#include "detkit/evaluation/coco_report.h"
#include "detkit/utils/error.h"
#include "detkit/utils/progress.h"

namespace detkit::evaluation {

std::vector<double> linspace(double start, double stop, int num) {
  std::vector<double> out(num);
  double step = num > 1 ? (stop - start) / (num - 1) : 0.0;
  for (int k = 0; k < num; ++k) out[k] = k * step + start;
  if (num > 1) out[num - 1] = stop;
  return out;
}

EvalParams default_eval_params(IouType iou_type) {
  EvalParams params;
  if (iou_type == IouType::Keypoints) {
    params.max_dets = {20};
    params.area_ranges = {{0, 1e10}, {32 * 32, 96 * 96}, {96 * 96, 1e10}};
    params.area_labels = {"all", "medium", "large"};
  }
  return params;
}

struct COCOeval::Pair {
  std::vector<int64_t> gt;   // indices into gts_, in file order
  std::vector<int64_t> dt;   // indices into dts_, stable-sorted by score, cut at max_dets.back()
  std::vector<double> ious;  // dt.size() x gt.size()
};

COCOeval::COCOeval(std::vector<EvalObject> gts, std::vector<EvalObject> dts,
                   std::vector<int64_t> gt_image_ids, std::vector<int64_t> gt_category_ids,
                   IouType iou_type, EvalParams params, std::optional<IouMatrices> given_ious)
    : gts_(std::move(gts)),
      dts_(std::move(dts)),
      iou_type_(iou_type),
      params_(std::move(params)),
      given_ious_(std::move(given_ious)) {
  auto sorted_unique = [](std::vector<int64_t> v) {
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
    return v;
  };
  params_.image_ids = sorted_unique(params_.image_ids.empty() ? gt_image_ids : params_.image_ids);
  params_.category_ids =
      sorted_unique(params_.category_ids.empty() ? gt_category_ids : params_.category_ids);
  if (params_.max_dets.empty()) throw Error("COCOeval: max_dets must not be empty");
  if (params_.area_ranges.size() != params_.area_labels.size())
    throw Error("COCOeval: area_ranges and area_labels differ in length");
  if (iou_type_ == IouType::Keypoints && !given_ious_) {
    const size_t values = 3 * params_.kpt_oks_sigmas.size();
    auto check = [&](const std::vector<EvalObject>& objects, const char* what) {
      for (const EvalObject& o : objects) {
        if (o.keypoints.size() != values)
          throw Error("COCOeval: " + std::string(what) + " " + std::to_string(o.id) + " of image " +
                      std::to_string(o.image_id) + " has " + std::to_string(o.keypoints.size()) +
                      " keypoint values; the " + std::to_string(params_.kpt_oks_sigmas.size()) +
                      " OKS sigmas need " + std::to_string(values));
      }
    };
    check(gts_, "ground-truth annotation");
    check(dts_, "detection");
  }
  auto wanted = [&](const EvalObject& o) {
    bool image = std::binary_search(params_.image_ids.begin(), params_.image_ids.end(), o.image_id);
    bool category =
        !params_.use_cats ||
        std::binary_search(params_.category_ids.begin(), params_.category_ids.end(), o.category_id);
    return image && category;
  };
  for (size_t i = 0; i < gts_.size(); ++i)
    if (wanted(gts_[i])) gts_by_image_cat_[{gts_[i].image_id, gts_[i].category_id}].push_back(i);
  for (size_t i = 0; i < dts_.size(); ++i)
    if (wanted(dts_[i])) dts_by_image_cat_[{dts_[i].image_id, dts_[i].category_id}].push_back(i);
}

COCOeval::Pair COCOeval::gather(int64_t image_id, int64_t category_id) const {
  Pair pair;
  auto append = [&](const auto& index, int64_t cat, std::vector<int64_t>& out) {
    auto it = index.find({image_id, cat});
    if (it != index.end()) out.insert(out.end(), it->second.begin(), it->second.end());
  };
  if (params_.use_cats) {
    append(gts_by_image_cat_, category_id, pair.gt);
    append(dts_by_image_cat_, category_id, pair.dt);
  } else {
    for (int64_t cat : params_.category_ids) {
      append(gts_by_image_cat_, cat, pair.gt);
      append(dts_by_image_cat_, cat, pair.dt);
    }
  }
  std::stable_sort(pair.dt.begin(), pair.dt.end(),
                   [&](int64_t a, int64_t b) { return dts_[a].score > dts_[b].score; });
  if (pair.dt.size() > static_cast<size_t>(params_.max_dets.back()))
    pair.dt.resize(params_.max_dets.back());
  if (pair.gt.empty() || pair.dt.empty()) return pair;
  if (given_ious_) {
    auto it = given_ious_->find({image_id, category_id});
    const size_t want = pair.dt.size() * pair.gt.size();
    if (it == given_ious_->end() || it->second.size() != want)
      throw Error("COCOeval: the IoUs given for image " + std::to_string(image_id) + ", category " +
                  std::to_string(category_id) + " are " +
                  (it == given_ious_->end() ? std::string("missing")
                                            : std::to_string(it->second.size()) + " values") +
                  "; its " + std::to_string(pair.dt.size()) + " detections x " +
                  std::to_string(pair.gt.size()) + " ground truth need " + std::to_string(want));
    pair.ious = it->second;
    return pair;
  }
  std::vector<bool> crowd;
  for (int64_t g : pair.gt) crowd.push_back(gts_[g].iscrowd);
  if (iou_type_ == IouType::Keypoints) {
    std::vector<const std::vector<double>*> d;
    std::vector<OksGroundTruth> g;
    for (int64_t i : pair.dt) d.push_back(&dts_[i].keypoints);
    for (int64_t i : pair.gt) g.push_back({&gts_[i].keypoints, gts_[i].bbox, gts_[i].area});
    pair.ious = keypoint_oks(d, g, params_.kpt_oks_sigmas);
  } else if (iou_type_ == IouType::Segm) {
    std::vector<mask_ops::RLE> d, g;
    for (int64_t i : pair.dt) d.push_back(dts_[i].rle);
    for (int64_t i : pair.gt) g.push_back(gts_[i].rle);
    pair.ious = mask_ops::iou(d, g, crowd);
  } else {
    std::vector<std::array<double, 4>> d, g;
    for (int64_t i : pair.dt) d.push_back(dts_[i].bbox);
    for (int64_t i : pair.gt) g.push_back(gts_[i].bbox);
    pair.ious = mask_ops::box_iou(d, g, crowd);
  }
  return pair;
}

COCOeval::ImageEval COCOeval::evaluate_image(const Pair& pair,
                                             const std::array<double, 2>& area_range) const {
  auto outside = [&](double area) { return area < area_range[0] || area > area_range[1]; };
  // Ground truth: ignored ones (crowd or outside the area range) sorted last, stably.
  std::vector<uint8_t> ignore_of(pair.gt.size());
  for (size_t j = 0; j < pair.gt.size(); ++j) {
    const auto& g = gts_[pair.gt[j]];
    const bool unlabelled = iou_type_ == IouType::Keypoints && g.num_keypoints == 0;
    ignore_of[j] = g.iscrowd || unlabelled || outside(g.area);
  }
  std::vector<size_t> gt_order(pair.gt.size());
  std::iota(gt_order.begin(), gt_order.end(), 0);
  std::stable_sort(gt_order.begin(), gt_order.end(),
                   [&](size_t a, size_t b) { return ignore_of[a] < ignore_of[b]; });

  const size_t T = params_.iou_thresholds.size(), G = pair.gt.size(), D = pair.dt.size();
  ImageEval e;
  e.dt_matches.assign(T * D, 0);
  e.dt_ignore.assign(T * D, 0);
  for (size_t j : gt_order) e.gt_ignore.push_back(ignore_of[j]);
  for (int64_t d : pair.dt) e.dt_scores.push_back(dts_[d].score);
  std::vector<int64_t> gt_matched(T * G, 0);

  if (!pair.ious.empty()) {
    for (size_t t = 0; t < T; ++t) {
      for (size_t d = 0; d < D; ++d) {
        double best = std::min(params_.iou_thresholds[t], 1 - 1e-10);
        long m = -1;
        for (size_t gi = 0; gi < G; ++gi) {
          size_t g = gt_order[gi];
          bool crowd = gts_[pair.gt[g]].iscrowd;
          if (gt_matched[t * G + gi] > 0 && !crowd) continue;  // taken, and not a crowd
          // Matched a regular ground truth already; the rest are ignored ones: stop.
          if (m > -1 && e.gt_ignore[m] == 0 && e.gt_ignore[gi] == 1) break;
          double iou = pair.ious[d * G + g];
          if (iou < best) continue;
          best = iou;
          m = static_cast<long>(gi);
        }
        if (m == -1) continue;
        e.dt_ignore[t * D + d] = e.gt_ignore[m];
        e.dt_matches[t * D + d] = gts_[pair.gt[gt_order[m]]].id;
        gt_matched[t * G + m] = dts_[pair.dt[d]].id;
      }
    }
  }
  // Unmatched detections outside the area range are ignored.
  for (size_t d = 0; d < D; ++d) {
    if (!outside(dts_[pair.dt[d]].area)) continue;
    for (size_t t = 0; t < T; ++t)
      if (e.dt_matches[t * D + d] == 0) e.dt_ignore[t * D + d] = 1;
  }
  return e;
}

void COCOeval::evaluate() {
  const size_t K = params_.use_cats ? params_.category_ids.size() : 1;
  const size_t A = params_.area_ranges.size(), I = params_.image_ids.size();
  evals_.assign(K * A * I, std::nullopt);
  Progress progress(std::string("COCOeval ") + iou_type_name(iou_type_) + ", per-image evaluation",
                    static_cast<double>(K), "categories");
  for (size_t k = 0; k < K; ++k) {
    progress.update(static_cast<double>(k));
    int64_t cat = params_.use_cats ? params_.category_ids[k] : -1;
    for (size_t i = 0; i < I; ++i) {
      Pair pair = gather(params_.image_ids[i], cat);
      if (pair.gt.empty() && pair.dt.empty()) continue;
      for (size_t a = 0; a < A; ++a)
        evals_[(k * A + a) * I + i] = evaluate_image(pair, params_.area_ranges[a]);
    }
  }
  accumulated_ = false;
}

size_t COCOeval::precision_index(size_t t, size_t r, size_t k, size_t a, size_t m) const {
  const size_t R = params_.recall_thresholds.size(), A = params_.area_ranges.size(),
               M = params_.max_dets.size();
  const size_t K = params_.use_cats ? params_.category_ids.size() : 1;
  return (((t * R + r) * K + k) * A + a) * M + m;
}

size_t COCOeval::recall_index(size_t t, size_t k, size_t a, size_t m) const {
  const size_t A = params_.area_ranges.size(), M = params_.max_dets.size();
  const size_t K = params_.use_cats ? params_.category_ids.size() : 1;
  return ((t * K + k) * A + a) * M + m;
}

void COCOeval::accumulate() {
  if (evals_.empty() && !params_.image_ids.empty()) evaluate();
  const size_t T = params_.iou_thresholds.size(), R = params_.recall_thresholds.size();
  const size_t K = params_.use_cats ? params_.category_ids.size() : 1;
  const size_t A = params_.area_ranges.size(), M = params_.max_dets.size();
  const size_t I = params_.image_ids.size();
  precision_.assign(T * R * K * A * M, -1.0);
  recall_.assign(T * K * A * M, -1.0);
  scores_.assign(T * R * K * A * M, -1.0);
  const double eps = std::numeric_limits<double>::epsilon();  // np.spacing(1)

  for (size_t k = 0; k < K; ++k) {
    for (size_t a = 0; a < A; ++a) {
      for (size_t m = 0; m < M; ++m) {
        const size_t max_det = static_cast<size_t>(params_.max_dets[m]);
        // Detections of every image (image order), each cut at max_det, then stably sorted.
        std::vector<double> scores;
        std::vector<std::pair<const ImageEval*, size_t>> where;  // (image eval, column)
        size_t num_gt_kept = 0;
        bool any = false;
        for (size_t i = 0; i < I; ++i) {
          const auto& e = evals_[(k * A + a) * I + i];
          if (!e) continue;
          any = true;
          size_t n = std::min(max_det, e->dt_scores.size());
          for (size_t d = 0; d < n; ++d) {
            scores.push_back(e->dt_scores[d]);
            where.emplace_back(&*e, d);
          }
          for (uint8_t ig : e->gt_ignore) num_gt_kept += ig == 0;
        }
        if (!any || num_gt_kept == 0) continue;
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
            size_t D = e->dt_scores.size();
            bool matched = e->dt_matches[t * D + d] != 0;
            bool ignored = e->dt_ignore[t * D + d] != 0;
            tp += matched && !ignored;
            fp += !matched && !ignored;
            rc[j] = tp / num_gt_kept;
            pr[j] = tp / (fp + tp + eps);
          }
          recall_[recall_index(t, k, a, m)] = nd ? rc[nd - 1] : 0.0;
          for (size_t j = nd; j-- > 1;)
            if (pr[j] > pr[j - 1]) pr[j - 1] = pr[j];
          for (size_t r = 0; r < R; ++r) {
            size_t pos =
                std::lower_bound(rc.begin(), rc.end(), params_.recall_thresholds[r]) - rc.begin();
            // pycocotools stops filling at the first threshold past the last recall: zeros.
            precision_[precision_index(t, r, k, a, m)] = pos < nd ? pr[pos] : 0.0;
            scores_[precision_index(t, r, k, a, m)] = pos < nd ? scores[order[pos]] : 0.0;
            if (pos >= nd)
              for (size_t r2 = r + 1; r2 < R; ++r2) {
                precision_[precision_index(t, r2, k, a, m)] = 0.0;
                scores_[precision_index(t, r2, k, a, m)] = 0.0;
              }
            if (pos >= nd) break;
          }
        }
      }
    }
  }
  accumulated_ = true;
}

double COCOeval::summarize_one(bool ap, std::optional<double> iou_threshold,
                               const std::string& area, int64_t max_dets) const {
  if (!accumulated_) throw Error("COCOeval: call evaluate() and accumulate() before summarize()");
  const size_t T = params_.iou_thresholds.size(), R = params_.recall_thresholds.size();
  const size_t K = params_.use_cats ? params_.category_ids.size() : 1;
  std::vector<size_t> a_ind, m_ind, t_ind;
  for (size_t a = 0; a < params_.area_labels.size(); ++a)
    if (params_.area_labels[a] == area) a_ind.push_back(a);
  for (size_t m = 0; m < params_.max_dets.size(); ++m)
    if (params_.max_dets[m] == max_dets) m_ind.push_back(m);
  for (size_t t = 0; t < T; ++t)
    if (!iou_threshold || params_.iou_thresholds[t] == *iou_threshold) t_ind.push_back(t);
  double sum = 0;
  size_t count = 0;
  for (size_t t : t_ind)
    for (size_t k = 0; k < K; ++k)
      for (size_t a : a_ind)
        for (size_t m : m_ind) {
          if (ap) {
            for (size_t r = 0; r < R; ++r) {
              double v = precision_[precision_index(t, r, k, a, m)];
              if (v > -1) sum += v, ++count;
            }
          } else {
            double v = recall_[recall_index(t, k, a, m)];
            if (v > -1) sum += v, ++count;
          }
        }
  return count ? sum / count : -1.0;
}

struct COCOeval::SummaryLine {
  bool ap;
  std::optional<double> iou_threshold;  // nullopt: every threshold
  const char* area;
  int64_t max_dets;
};

// pycocotools' _summarizeDets (bbox, segm) and _summarizeKps (keypoints).
std::vector<COCOeval::SummaryLine> COCOeval::summary_lines() const {
  const auto& md = params_.max_dets;
  const std::nullopt_t all = std::nullopt;
  if (iou_type_ == IouType::Keypoints) {
    const int64_t m = md.back();  // pycocotools asks for 20: maxDets must hold it
    return {{true, all, "all", m},    {true, 0.5, "all", m},   {true, 0.75, "all", m},
            {true, all, "medium", m}, {true, all, "large", m}, {false, all, "all", m},
            {false, 0.5, "all", m},   {false, 0.75, "all", m}, {false, all, "medium", m},
            {false, all, "large", m}};
  }
  const int64_t mid = md.size() > 1 ? md[1] : md.back();
  const int64_t third = md.size() > 2 ? md[2] : md.back();
  return {{true, all, "all", 100},       {true, 0.5, "all", third},
          {true, 0.75, "all", third},    {true, all, "small", third},
          {true, all, "medium", third},  {true, all, "large", third},
          {false, all, "all", md[0]},    {false, all, "all", mid},
          {false, all, "all", third},    {false, all, "small", third},
          {false, all, "medium", third}, {false, all, "large", md.back()}};
}

std::vector<double> COCOeval::summarize() const {
  std::vector<double> stats;
  for (const SummaryLine& l : summary_lines())
    stats.push_back(summarize_one(l.ap, l.iou_threshold, l.area, l.max_dets));
  return stats;
}

std::string COCOeval::summary_text() const {
  const auto stats = summarize();
  const auto lines = summary_lines();
  std::string out;
  char buf[160];
  for (size_t i = 0; i < lines.size(); ++i) {
    const SummaryLine& l = lines[i];
    char iou[32];
    if (l.iou_threshold) {
      std::snprintf(iou, sizeof(iou), "%0.2f", *l.iou_threshold);
    } else {
      std::snprintf(iou, sizeof(iou), "%0.2f:%0.2f", params_.iou_thresholds.front(),
                    params_.iou_thresholds.back());
    }
    std::snprintf(buf, sizeof(buf), " %-18s %s @[ IoU=%-9s | area=%6s | maxDets=%3lld ] = %0.3f\n",
                  l.ap ? "Average Precision" : "Average Recall", l.ap ? "(AP)" : "(AR)", iou,
                  l.area, static_cast<long long>(l.max_dets), stats[i]);
    out += buf;
  }
  return out;
}

std::map<int64_t, std::optional<double>> COCOeval::per_category_ap() const {
  if (!accumulated_) throw Error("COCOeval: call evaluate() and accumulate() first");
  std::map<int64_t, std::optional<double>> out;
  if (!params_.use_cats) return out;
  const size_t T = params_.iou_thresholds.size(), R = params_.recall_thresholds.size();
  const size_t m = params_.max_dets.size() - 1;
  for (size_t k = 0; k < params_.category_ids.size(); ++k) {
    double sum = 0;
    size_t count = 0;
    for (size_t t = 0; t < T; ++t)
      for (size_t r = 0; r < R; ++r) {
        double v = precision_[precision_index(t, r, k, 0, m)];
        if (v > -1) sum += v, ++count;
      }
    out[params_.category_ids[k]] = count ? std::optional<double>(sum / count) : std::nullopt;
  }
  return out;
}

}  // namespace detkit::evaluation

#include "detkit/evaluation/panoptic_quality.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <filesystem>
#include <limits>
#include <optional>
#include <unordered_map>

#include "detkit/utils/error.h"

namespace detkit::evaluation {
namespace {

constexpr uint64_t kIdOffset = uint64_t{1} << 24;  // panopticapi's OFFSET: ids fit 24 bits
constexpr int64_t kVoid = 0;

std::string image_text(const PanopticAnnotation& a) {
  return "image_id " + std::to_string(a.image_id) + " (" + a.file_name + ")";
}

// Pixels per (ground-truth id, predicted id), sorted as np.unique sorts gt * OFFSET + pred.
std::vector<std::pair<uint64_t, int64_t>> count_id_pairs(const PixelMap& gt, const PixelMap& pred) {
  std::unordered_map<uint64_t, int64_t> counts;
  uint64_t last_key = std::numeric_limits<uint64_t>::max();
  int64_t* last_count = nullptr;
  for (size_t i = 0; i < gt.values.size(); ++i) {
    const uint64_t key =
        static_cast<uint64_t>(gt.values[i]) * kIdOffset + static_cast<uint64_t>(pred.values[i]);
    if (key != last_key) {  // runs of one pair are the common case
      last_key = key;
      last_count = &counts[key];
    }
    ++*last_count;
  }
  std::vector<std::pair<uint64_t, int64_t>> sorted(counts.begin(), counts.end());
  std::sort(sorted.begin(), sorted.end());
  return sorted;
}

std::optional<int64_t> segment_index(const std::unordered_map<int64_t, size_t>& index, int64_t id) {
  const auto it = index.find(id);
  if (it == index.end()) return std::nullopt;
  return static_cast<int64_t>(it->second);
}

}  // namespace

PQImageCounts pq_compute_image(const PanopticAnnotation& ground_truth, const PixelMap& gt_ids,
                               const PanopticAnnotation& prediction, const PixelMap& pred_ids,
                               const std::map<int64_t, PanopticCategory>& categories,
                               const std::string& prediction_name) {
  check_pixel_map_size(pred_ids, gt_ids.height, gt_ids.width,
                       prediction_name + " (prediction of " + image_text(ground_truth) + ")");
  const auto& gt_segments = ground_truth.segments_info;
  const auto& pred_segments = prediction.segments_info;
  std::unordered_map<int64_t, size_t> gt_index, pred_index;
  for (size_t i = 0; i < gt_segments.size(); ++i) gt_index[gt_segments[i].id] = i;
  for (size_t i = 0; i < pred_segments.size(); ++i) pred_index[pred_segments[i].id] = i;

  const auto pairs = count_id_pairs(gt_ids, pred_ids);
  // Predicted areas from the PNG, with panopticapi's sanity checks (in increasing id order).
  std::map<int64_t, int64_t> pred_pixels;
  for (const auto& [key, pixels] : pairs)
    pred_pixels[static_cast<int64_t>(key % kIdOffset)] += pixels;
  std::vector<int64_t> pred_area(pred_segments.size(), -1);
  for (const auto& [id, pixels] : pred_pixels) {
    const auto i = segment_index(pred_index, id);
    if (!i) {
      if (id == kVoid) continue;
      throw Error(prediction_name + ": segment id " + std::to_string(id) + " is in the PNG of " +
                  image_text(ground_truth) + " but not in its segments_info");
    }
    pred_area[*i] = pixels;
    const int64_t category = pred_segments[*i].category_id;
    if (!categories.count(category))
      throw Error(prediction_name + ": segment id " + std::to_string(id) + " of " +
                  image_text(ground_truth) + " has unknown category_id " +
                  std::to_string(category));
  }
  std::string without_pixels;
  for (size_t i = 0; i < pred_segments.size(); ++i)
    if (pred_area[i] < 0) without_pixels += " " + std::to_string(pred_segments[i].id);
  if (!without_pixels.empty())
    throw Error(prediction_name + ": segment ids" + without_pixels + " of " +
                image_text(ground_truth) + " are in segments_info but have no pixel in the PNG");

  std::unordered_map<int64_t, int64_t> on_void;  // predicted id -> its pixels on void
  std::unordered_map<uint64_t, int64_t> intersection;
  for (const auto& [key, pixels] : pairs) {
    intersection[key] = pixels;
    if (static_cast<int64_t>(key / kIdOffset) == kVoid)
      on_void[static_cast<int64_t>(key % kIdOffset)] = pixels;
  }
  auto void_pixels = [&](int64_t pred_id) {
    const auto it = on_void.find(pred_id);
    return it == on_void.end() ? int64_t{0} : it->second;
  };

  PQImageCounts out;
  std::vector<bool> gt_matched(gt_segments.size(), false),
      pred_matched(pred_segments.size(), false);
  for (const auto& [key, pixels] : pairs) {
    const auto g = segment_index(gt_index, static_cast<int64_t>(key / kIdOffset));
    const auto p = segment_index(pred_index, static_cast<int64_t>(key % kIdOffset));
    if (!g || !p) continue;
    const PanopticSegmentInfo& gt = gt_segments[*g];
    const PanopticSegmentInfo& pred = pred_segments[*p];
    if (gt.iscrowd || gt.category_id != pred.category_id) continue;
    const double union_pixels = static_cast<double>(pred_area[*p]) + gt.area -
                                static_cast<double>(pixels) -
                                static_cast<double>(void_pixels(pred.id));
    const double iou = static_cast<double>(pixels) / union_pixels;
    if (iou > 0.5) {
      ++out.counts[gt.category_id].tp;
      out.matched.emplace_back(gt.category_id, iou);
      gt_matched[*g] = pred_matched[*p] = true;
    }
  }
  // Unmatched ground truth: false negatives, except crowd regions (the last one of a category
  // is the one predictions may fall on).
  std::map<int64_t, int64_t> crowd_of_category;
  for (size_t i = 0; i < gt_segments.size(); ++i) {
    if (gt_matched[i]) continue;
    if (gt_segments[i].iscrowd) {
      crowd_of_category[gt_segments[i].category_id] = gt_segments[i].id;
      continue;
    }
    ++out.counts[gt_segments[i].category_id].fn;
  }
  // Unmatched predictions: false positives unless mostly on void or their category's crowd.
  for (size_t i = 0; i < pred_segments.size(); ++i) {
    if (pred_matched[i]) continue;
    const PanopticSegmentInfo& pred = pred_segments[i];
    int64_t ignored = void_pixels(pred.id);
    const auto crowd = crowd_of_category.find(pred.category_id);
    if (crowd != crowd_of_category.end()) {
      const auto it = intersection.find(static_cast<uint64_t>(crowd->second) * kIdOffset +
                                        static_cast<uint64_t>(pred.id));
      if (it != intersection.end()) ignored += it->second;
    }
    if (static_cast<double>(ignored) / static_cast<double>(pred_area[i]) > 0.5) continue;
    ++out.counts[pred.category_id].fp;
  }
  return out;
}

PQResult pq_average(const std::map<int64_t, PQCategoryCounts>& counts,
                    const std::vector<PanopticCategory>& categories) {
  PQResult result;
  result.counts = counts;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (int kind = 0; kind < 3; ++kind) {  // All, Things, Stuff
    PQAverage& average = kind == 0 ? result.all : kind == 1 ? result.things : result.stuff;
    double pq = 0, sq = 0, rq = 0;
    for (const PanopticCategory& category : categories) {
      if (kind != 0 && category.isthing != (kind == 1)) continue;
      const auto it = counts.find(category.id);
      const PQCategoryCounts c = it == counts.end() ? PQCategoryCounts{} : it->second;
      PQScores scores;
      if (c.tp + c.fp + c.fn > 0) {
        ++average.n;
        const double tp = static_cast<double>(c.tp);
        const double denominator =
            tp + 0.5 * static_cast<double>(c.fp) + 0.5 * static_cast<double>(c.fn);
        scores = {c.iou / denominator, c.tp != 0 ? c.iou / tp : 0., tp / denominator};
        pq += scores.pq;
        sq += scores.sq;
        rq += scores.rq;
      }
      if (kind == 0) result.per_class.emplace_back(category.id, scores);
    }
    const double n = static_cast<double>(average.n);
    average.pq = average.n ? pq / n : nan;
    average.sq = average.n ? sq / n : nan;
    average.rq = average.n ? rq / n : nan;
  }
  return result;
}

PQResult pq_compute(const PanopticJson& ground_truth, const std::string& gt_folder,
                    const std::vector<PanopticAnnotation>& predictions,
                    const PanopticPngSource& read_prediction) {
  std::map<int64_t, PanopticCategory> categories;
  for (const PanopticCategory& c : ground_truth.categories) categories[c.id] = c;
  std::unordered_map<int64_t, const PanopticAnnotation*> prediction_of;
  for (const PanopticAnnotation& p : predictions) prediction_of[p.image_id] = &p;
  const auto& images = ground_truth.annotations;
  for (const PanopticAnnotation& gt : images)
    if (!prediction_of.count(gt.image_id))
      throw Error("no prediction for the image with id " + std::to_string(gt.image_id) + " (" +
                  gt.file_name + ")");

  std::vector<PQImageCounts> per_image(images.size());
  at::parallel_for(0, static_cast<int64_t>(images.size()), 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const PanopticAnnotation& gt = images[i];
      const PanopticAnnotation& pred = *prediction_of.at(gt.image_id);
      const PixelMap gt_ids = read_panoptic_png(gt_folder + "/" + gt.file_name);
      per_image[i] =
          pq_compute_image(gt, gt_ids, pred, read_prediction(pred), categories, pred.file_name);
    }
  });
  std::map<int64_t, PQCategoryCounts> counts;
  for (const PQImageCounts& image : per_image) {
    for (const auto& [category, c] : image.counts) {
      PQCategoryCounts& total = counts[category];
      total.tp += c.tp;
      total.fp += c.fp;
      total.fn += c.fn;
    }
    for (const auto& [category, iou] : image.matched) counts[category].iou += iou;
  }
  return pq_average(counts, ground_truth.categories);
}

PQResult pq_compute(const std::string& gt_json, const std::string& pred_json,
                    const std::string& gt_folder, const std::string& pred_folder) {
  for (const auto& [folder, what] :
       {std::pair{gt_folder, "ground truth"}, std::pair{pred_folder, "predicted"}})
    if (!std::filesystem::is_directory(folder))
      throw Error("folder " + folder + " with " + what + " segmentations does not exist");
  const PanopticJson ground_truth = load_panoptic_json(gt_json, /*ground_truth=*/true);
  const PanopticJson predictions = load_panoptic_json(pred_json, /*ground_truth=*/false);
  return pq_compute(ground_truth, gt_folder, predictions.annotations,
                    [&](const PanopticAnnotation& p) {
                      return read_panoptic_png(pred_folder + "/" + p.file_name);
                    });
}

}  // namespace detkit::evaluation

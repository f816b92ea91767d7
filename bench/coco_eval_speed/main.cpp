// coco_eval_speed: how long COCOeval takes on a val2017-sized evaluation.
//
// Synthesises ground truth shaped like COCO val2017 (5000 images of 480x640, 3..11 instances per
// image with polygon masks, 80 categories, 1% crowd) and a Detectron2-style results list of 100
// detections per image with compressed-RLE masks (about a third jittered copies of ground truth,
// the rest random), then times, in this process: parsing the results JSON for bbox and for segm,
// and COCOeval evaluate / accumulate / summarize for each. Prints each phase's wall time and the
// process's peak RSS after it (VmHWM).
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "detkit/evaluation/coco_eval.h"
#include "detkit/evaluation/coco_results.h"
#include "detkit/structures/mask_ops.h"

namespace {

using detkit::evaluation::EvalObject;
using detkit::evaluation::IouType;
namespace mask_ops = detkit::mask_ops;

constexpr int kHeight = 480, kWidth = 640, kCategories = 80;

// Peak resident set size of this process so far, in MB (Linux VmHWM).
double peak_rss_mb() {
  std::ifstream status("/proc/self/status");
  std::string key;
  while (status >> key) {
    if (key == "VmHWM:") {
      double kb = 0;
      status >> kb;
      return kb / 1024.0;
    }
    status.ignore(1 << 16, '\n');
  }
  return 0;
}

template <typename F>
double seconds(F&& f) {
  const auto start = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// A star-shaped 12-gon inside the box (x, y, w, h): a blob-like object outline.
std::vector<double> blob(const std::array<double, 4>& box, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> radius(0.6, 1.0);
  std::vector<double> xy;
  const double cx = box[0] + box[2] / 2, cy = box[1] + box[3] / 2;
  for (int k = 0; k < 12; ++k) {
    const double angle = 2 * M_PI * k / 12, r = radius(rng);
    xy.push_back(std::round((cx + std::cos(angle) * r * box[2] / 2) * 100) / 100);
    xy.push_back(std::round((cy + std::sin(angle) * r * box[3] / 2) * 100) / 100);
  }
  return xy;
}

std::array<double, 4> random_box(std::mt19937_64& rng) {
  std::uniform_real_distribution<double> log_size(std::log(6.0), std::log(400.0));
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const double w = std::exp(log_size(rng)), h = std::exp(log_size(rng));
  return {unit(rng) * (kWidth - w), unit(rng) * (kHeight - h), w, h};
}

std::array<double, 4> jitter(const std::array<double, 4>& box, std::mt19937_64& rng) {
  std::normal_distribution<double> noise(0.0, 0.08);
  const double w = std::max(2.0, box[2] * (1 + noise(rng)));
  const double h = std::max(2.0, box[3] * (1 + noise(rng)));
  const double x = std::clamp(box[0] + noise(rng) * box[2], 0.0, kWidth - w);
  const double y = std::clamp(box[1] + noise(rng) * box[3], 0.0, kHeight - h);
  return {x, y, w, h};
}

struct Synthetic {
  std::vector<EvalObject> gts;
  std::vector<int64_t> image_ids, category_ids;
  std::string results_json;
  size_t num_detections = 0;
};

Synthetic synthesise(int num_images, int dets_per_image, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> num_gt(3, 11), category(1, kCategories);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  Synthetic s;
  for (int c = 1; c <= kCategories; ++c) s.category_ids.push_back(c);
  std::string& out = s.results_json;
  out = "[";
  for (int image = 1; image <= num_images; ++image) {
    s.image_ids.push_back(image);
    const size_t first_gt = s.gts.size();
    for (int g = num_gt(rng); g > 0; --g) {
      EvalObject gt;
      gt.id = static_cast<int64_t>(s.gts.size()) + 1;
      gt.image_id = image;
      gt.category_id = category(rng);
      gt.iscrowd = unit(rng) < 0.01;
      const auto box = random_box(rng);
      gt.rle = mask_ops::from_polygon(blob(box, rng), kHeight, kWidth);
      gt.bbox = mask_ops::to_bbox(gt.rle);
      gt.area = static_cast<double>(mask_ops::area(gt.rle));
      s.gts.push_back(std::move(gt));
    }
    for (int d = 0; d < dets_per_image; ++d) {
      std::array<double, 4> box;
      int64_t cat;
      if (d < dets_per_image / 3) {  // near a ground-truth object, mostly of its category
        const EvalObject& gt = s.gts[first_gt + d % (s.gts.size() - first_gt)];
        box = jitter(gt.bbox[2] > 0 ? gt.bbox : random_box(rng), rng);
        cat = unit(rng) < 0.8 ? gt.category_id : category(rng);
      } else {
        box = random_box(rng);
        cat = category(rng);
      }
      const mask_ops::RLE rle = mask_ops::from_polygon(blob(box, rng), kHeight, kWidth);
      const auto b = mask_ops::to_bbox(rle);
      out += fmt::format(
          "{}{{\"image_id\": {}, \"category_id\": {}, \"bbox\": [{:.2f}, {:.2f}, {:.2f}, {:.2f}], "
          "\"score\": {:.5f}, \"segmentation\": {{\"size\": [{}, {}], \"counts\": {}}}}}",
          s.num_detections == 0 ? "" : ", ", image, cat, b[0], b[1], b[2], b[3], unit(rng),
          kHeight, kWidth, nlohmann::json(mask_ops::to_string(rle)).dump());
      ++s.num_detections;
    }
  }
  out += "]";
  return s;
}

void run(const Synthetic& s, IouType type, const char* name) {
  detkit::evaluation::GroundTruthIds ids;
  ids.image_ids.insert(s.image_ids.begin(), s.image_ids.end());
  ids.category_ids.insert(s.category_ids.begin(), s.category_ids.end());
  std::vector<EvalObject> dts;
  const double parse = seconds([&] {
    dts = detkit::evaluation::parse_coco_results(s.results_json, "synthetic", type, ids);
  });
  fmt::print("{:<5} parse results JSON  {:8.2f} s   peak RSS {:6.0f} MB\n", name, parse,
             peak_rss_mb());
  detkit::evaluation::COCOeval eval(s.gts, std::move(dts), s.image_ids, s.category_ids, type);
  const double evaluate = seconds([&] { eval.evaluate(); });
  fmt::print("{:<5} evaluate            {:8.2f} s   peak RSS {:6.0f} MB\n", name, evaluate,
             peak_rss_mb());
  const double accumulate = seconds([&] { eval.accumulate(); });
  fmt::print("{:<5} accumulate          {:8.2f} s   peak RSS {:6.0f} MB\n", name, accumulate,
             peak_rss_mb());
  std::vector<double> stats;
  const double summarize = seconds([&] { stats = eval.summarize(); });
  fmt::print("{:<5} summarize           {:8.2f} s   peak RSS {:6.0f} MB\n", name, summarize,
             peak_rss_mb());
  fmt::print("{:<5} total (parse + eval) {:7.2f} s   AP {:.4f}  AP50 {:.4f}  AR100 {:.4f}\n", name,
             parse + evaluate + accumulate + summarize, stats[0], stats[1], stats[8]);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Times COCOeval (bbox and segm) on a synthetic val2017-sized evaluation"};
  int images = 5000, dets = 100;
  uint64_t seed = 0;
  app.add_option("--images", images, "images (val2017: 5000)");
  app.add_option("--dets", dets, "detections per image (Detectron2's default: 100)");
  app.add_option("--seed", seed, "random seed");
  CLI11_PARSE(app, argc, argv);
  Synthetic s;
  const double make = seconds([&] { s = synthesise(images, dets, seed); });
  fmt::print("synthetic: {} images of {}x{}, {} ground-truth instances, {} categories, {} "
             "detections ({:.0f} MB of results JSON), made in {:.1f} s\n",
             images, kWidth, kHeight, s.gts.size(), kCategories, s.num_detections,
             s.results_json.size() / 1e6, make);
  fmt::print("peak RSS after synthesis: {:.0f} MB\n", peak_rss_mb());
  run(s, IouType::Bbox, "bbox");
  run(s, IouType::Segm, "segm");
  return 0;
}

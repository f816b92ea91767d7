// model_iteration: the time of one training iteration (forward with losses, backward, SGD step)
// of a detkit model on a batch of synthetic images, Detectron2's "s/iter" for one process.
//
//   model_iteration [--config-file configs/COCO-InstanceSegmentation/mask_rcnn_R_50_FPN_1x.yaml]
//                   [--images 2] [--size 800x1333] [--iterations 3] [--warmup 1] [--threads 2]
//                   [KEY VALUE ...]
//
// Weights are random, so the default backbone norm is trainable BN (MODEL.RESNETS.NORM BN: with
// random weights FrozenBN diverges at once, see DETECTRON2_FACTS.md); KEY VALUE overrides come
// after it. Each image holds 8 boxes with polygon masks. Prints every iteration and the median
// and fastest of the timed ones; no threshold, nothing asserted.
#include <ATen/CPUGeneratorImpl.h>
#include <fmt/format.h>
#include <torch/optim/sgd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <regex>

#include "detkit/config/defaults.h"
#include "detkit/modeling/meta_arch/generalized_rcnn.h"
#include "detkit/utils/error.h"
#include "detkit/utils/threads.h"

namespace {

using detkit::modeling::ModelInput;

std::vector<ModelInput> synthetic_batch(int64_t images, int64_t height, int64_t width) {
  auto gen = at::detail::createCPUGenerator(/*seed_val=*/7);
  std::vector<ModelInput> batch(images);
  for (auto& input : batch) {
    input.image = at::rand({3, height, width}, gen) * 255;
    input.height = height;
    input.width = width;
    const int64_t n = 8;
    at::Tensor xy = at::rand({n, 2}, gen) * at::tensor({width * 0.7, height * 0.7});
    at::Tensor wh =
        (at::rand({n, 2}, gen) * 0.25 + 0.05) * at::tensor({double(width), double(height)});
    at::Tensor boxes = at::cat({xy, xy + wh}, 1).to(at::kFloat);
    std::vector<std::vector<detkit::structures::Polygon>> polygons;
    for (int64_t i = 0; i < n; ++i) {
      auto b = boxes[i];
      double x0 = b[0].item<double>(), y0 = b[1].item<double>();
      double x1 = b[2].item<double>(), y1 = b[3].item<double>();
      polygons.push_back(
          {{(x0 + x1) / 2, y0, x1, (y0 + y1) / 2, (x0 + x1) / 2, y1, x0, (y0 + y1) / 2}});
    }
    detkit::structures::Instances targets(height, width);
    targets.set("gt_boxes", detkit::structures::Boxes(boxes));
    targets.set("gt_classes", at::randint(0, 80, {n}, gen, at::kLong));
    targets.set("gt_masks", detkit::structures::PolygonMasks(polygons));
    input.instances = targets;
  }
  return batch;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Time one training iteration of a detkit model on synthetic images"};
  std::string config_file = std::string(DETKIT_SOURCE_DIR) +
                            "/configs/COCO-InstanceSegmentation/mask_rcnn_R_50_FPN_1x.yaml";
  std::string size = "800x1333";
  int64_t images = 2;
  int iterations = 3, warmup = 1, threads = 2;
  std::vector<std::string> overrides;
  app.add_option("--config-file", config_file, "Detectron2-style YAML config")
      ->capture_default_str();
  app.add_option("--images", images, "Images per batch")->capture_default_str();
  app.add_option("--size", size, "HEIGHTxWIDTH of every image")->capture_default_str();
  app.add_option("--iterations", iterations, "Timed iterations")->capture_default_str();
  app.add_option("--warmup", warmup, "Untimed iterations first")->capture_default_str();
  app.add_option("--threads", threads, "libtorch threads")->capture_default_str();
  app.add_option("overrides", overrides, "KEY VALUE config overrides");
  CLI11_PARSE(app, argc, argv);
  try {
    std::smatch m;
    if (!std::regex_match(size, m, std::regex(R"(([0-9]+)x([0-9]+))")))
      throw detkit::Error("--size must be HEIGHTxWIDTH, got '" + size + "'");
    const int64_t height = std::stoll(m[1]), width = std::stoll(m[2]);
    detkit::configure_threads(threads);
    auto cfg = detkit::config::get_cfg();
    cfg.merge_from_file(config_file);
    cfg.merge_from_list({"MODEL.DEVICE", "cpu", "MODEL.RESNETS.NORM", "BN"});
    cfg.merge_from_list(overrides);
    at::manual_seed(0);
    auto model = detkit::modeling::build_model(cfg);
    model->train();
    torch::optim::SGD sgd(model->parameters(), torch::optim::SGDOptions(0.001).momentum(0.9));
    auto batch = synthetic_batch(images, height, width);
    fmt::print("{}: {} images of {}x{}, {} threads, RESNETS.NORM {}\n", config_file, images, height,
               width, at::get_num_threads(), cfg.get_string("MODEL.RESNETS.NORM"));
    std::vector<double> timed;
    for (int it = 0; it < warmup + iterations; ++it) {
      auto start = std::chrono::steady_clock::now();
      auto losses = model->losses(batch);
      at::Tensor total = at::zeros({});
      for (const auto& [name, loss] : losses) total = total + loss;
      const double forward_s = seconds_since(start);
      sgd.zero_grad();
      total.backward();
      sgd.step();
      const double iteration_s = seconds_since(start);
      fmt::print(
          "iteration {}{}: {:.2f} s (forward {:.2f} s, backward + step {:.2f} s), loss {:.4f}\n",
          it, it < warmup ? " (warm-up)" : "", iteration_s, forward_s, iteration_s - forward_s,
          total.item<double>());
      if (it >= warmup) timed.push_back(iteration_s);
    }
    if (!timed.empty()) {
      std::sort(timed.begin(), timed.end());
      const size_t n = timed.size();
      const double median = n % 2 ? timed[n / 2] : (timed[n / 2 - 1] + timed[n / 2]) / 2;
      fmt::print("{} timed iterations: median {:.2f} s/iter ({:.3f} images/s), fastest {:.2f} s\n",
                 n, median, images / median, timed.front());
    }
  } catch (const std::exception& e) {
    fmt::print(stderr, "model_iteration: error: {}\n", e.what());
    return 1;
  }
  return 0;
}

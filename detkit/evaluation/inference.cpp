#include "detkit/evaluation/inference.h"

#include <ATen/ATen.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <optional>

#include "detkit/utils/progress.h"

namespace detkit::evaluation {

std::map<std::string, CocoEvalReport> inference_on_dataset(modeling::MetaArch& model,
                                                           data::TestLoader& loader,
                                                           DatasetEvaluator& evaluator) {
  using clock = std::chrono::steady_clock;
  auto seconds = [](clock::duration d) { return std::chrono::duration<double>(d).count(); };
  const size_t total = loader.size();
  spdlog::info("Start inference on {} images", total);
  const size_t warmup = std::min<size_t>(5, total > 0 ? total - 1 : 0);
  bool was_training = model.is_training();
  model.eval();
  std::optional<at::InferenceMode> inference_mode(std::in_place);  // not for evaluate()'s gather
  double data_time = 0, compute_time = 0, eval_time = 0;
  auto start = clock::now();
  size_t done = 0;
  Progress progress("Inference", static_cast<double>(total), "images");
  while (true) {
    auto t0 = clock::now();
    auto sample = loader.next();
    if (!sample) break;
    auto t1 = clock::now();
    // On the host before the clock stops: a GPU's work is done when its results are there.
    const structures::ModelOutput result =
        structures::on_host(model.outputs({sample->input}).at(0));
    auto t2 = clock::now();
    evaluator.process(*sample, result);
    auto t3 = clock::now();
    ++done;
    if (done == warmup) {  // restart the clocks: the first images pay for warm-up
      start = t3;
      data_time = compute_time = eval_time = 0;
      continue;
    }
    data_time += seconds(t1 - t0);
    compute_time += seconds(t2 - t1);
    eval_time += seconds(t3 - t2);
    // Detectron2's line, every 5 s (on a terminal, a status line as well).
    progress.update(static_cast<double>(done), [&] {
      const size_t timed = done - warmup;
      const double per_image = seconds(t3 - start) / timed;
      return fmt::format(
          "Inference done {}/{}. Dataloading: {:.4f} s/iter. Inference: {:.4f} s/iter. "
          "Eval: {:.4f} s/iter. Total: {:.4f} s/iter. ETA={}",
          done, total, data_time / timed, compute_time / timed, eval_time / timed, per_image,
          format_eta(per_image * (total - done)));
    });
  }
  if (done > warmup) {
    double total_time = seconds(clock::now() - start);
    spdlog::info("Total inference time: {:.2f} s ({:.4f} s / img, {} images after {} warm-up)",
                 total_time, total_time / (done - warmup), done - warmup, warmup);
  }
  inference_mode.reset();
  if (was_training) model.train();
  return evaluator.evaluate();
}

}  // namespace detkit::evaluation

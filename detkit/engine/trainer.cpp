#include "detkit/engine/trainer.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/Generator.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <sstream>

#include "detkit/distributed/comm.h"
#include "detkit/engine/anomaly_pass.h"
#include "detkit/solver/param_groups.h"
#include "detkit/utils/error.h"
#include "detkit/utils/event_scalars.h"
#include "detkit/utils/gpu.h"

namespace detkit::engine {

uint64_t iteration_seed(uint64_t seed, int64_t iter, int rank) {
  // splitmix64 of (seed, iter, rank): well-mixed, the same on every run, rank 0's independent of
  // the world size (a one-process run repeats exactly what it did before ranks existed).
  uint64_t z = seed + 0x9e3779b97f4a7c15ULL * static_cast<uint64_t>(iter + 1) +
               0xd1b54a32d192ed03ULL * static_cast<uint64_t>(rank);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

void broadcast_weights_from_main(modeling::MetaArch& model) {
  std::vector<at::Tensor> state = model.parameters();
  for (const auto& b : model.buffers()) state.push_back(b);
  distributed::broadcast_from_main(state);
}

double reported_lr(const solver::Optimizer& opt) {
  if (opt.num_groups() == 0) return 0.0;
  size_t best = 0;
  for (size_t g = 1; g < opt.num_groups(); ++g)
    if (opt.group(g).params.size() > opt.group(best).params.size()) best = g;
  return opt.group(best).lr;
}

namespace {
// libtorch's allocator explains an out-of-memory error over several lines: the first says it.
std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

Error stopped_at(int64_t iter, const std::string& what) {
  return Error("iteration " + std::to_string(iter) + ": " + what +
               " (training stopped; the last checkpoint is intact)");
}
}  // namespace

Trainer::Trainer(std::shared_ptr<modeling::MetaArch> model, solver::Optimizer& optimizer,
                 BatchSource data, uint64_t seed)
    : model_(std::move(model)),
      optimizer_(optimizer),
      data_(std::move(data)),
      seed_(seed),
      gpu_clock_(model_->device().is_cuda()) {}

void Trainer::train(int64_t start_iter, int64_t max_iter) {
  start_iter_ = iter_ = start_iter;
  max_iter_ = max_iter;
  skipped_steps_ = 0;
  stop_requested_ = false;
  storage_.set_iter(start_iter);
  spdlog::info("Starting training from iteration {}", start_iter);
  reducer_.reset();
  if (distributed::get_world_size() > 1) {
    const auto by_tensor = solver::parameter_names(*model_);  // the names, for errors
    const std::vector<at::Tensor> trained = trained_parameters();
    std::vector<std::string> names;
    for (const at::Tensor& p : trained) {
      auto it = by_tensor.find(p.unsafeGetTensorImpl());
      names.push_back(it == by_tensor.end() ? "(not in the model)" : it->second);
    }
    reducer_ = std::make_unique<distributed::GradientReducer>(trained, names);
  }
  model_->train();
  for (auto& h : hooks_) h->before_train(*this);
  for (; iter_ < max_iter_; ++iter_) {
    storage_.set_iter(iter_);
    for (auto& h : hooks_) h->before_step(*this);
    try {
      run_step();
    } catch (const c10::OutOfMemoryError& e) {  // the device's memory, and what the batch asked
      throw stopped_at(iter_, "out of memory on " + batch_shapes() + " (" + gpu_memory_report() +
                                  "): " + first_line(e.what_without_backtrace()) + step_context());
    } catch (const c10::Error& e) {  // a TORCH_CHECK: its message without libtorch's backtrace
      throw stopped_at(iter_, e.what_without_backtrace() + step_context() +
                                  divergence_report(e.what_without_backtrace()));
    } catch (const std::exception& e) {
      throw stopped_at(iter_, e.what() + step_context() + divergence_report(e.what()));
    }
    for (auto& h : hooks_) h->after_step(*this);
    if (stop_requested_) break;
  }
  // Detectron2's trainer.iter after the loop: the last iteration run.
  if (!stop_requested_) iter_ = max_iter_ - 1;
  for (auto& h : hooks_) h->after_train(*this);
}

std::string Trainer::step_context() const {
  std::string files;
  for (const std::string& f : batch_files_)
    if (!f.empty()) files += (files.empty() ? "" : ", ") + f;
  return fmt::format("; lr {:.6g}", reported_lr(optimizer_)) +
         (files.empty() ? "" : "; this rank's images: " + files);
}

std::string Trainer::batch_shapes() const {
  if (batch_.empty()) return "a batch not yet read";
  std::string shapes;
  for (const auto& input : batch_) {
    shapes += shapes.empty() ? "" : ", ";
    for (int64_t d = 0; d < input.image.dim(); ++d)
      shapes += (d ? "x" : "") + std::to_string(input.image.size(d));
  }
  return "the batch of " + std::to_string(batch_.size()) + " image(s) " + shapes;
}

std::string Trainer::divergence_report(const std::string& error) {
  // Detectron2's divergence checks and detkit's loss check all say "NaN"; other errors are not
  // about values, and a batch that could not be read has nothing to run again.
  if (batch_.empty() || error.find("NaN") == std::string::npos) return "";
  spdlog::info("iteration {}: running the anomaly pass on the failing batch", iter_);
  const std::string report = "; " + anomaly_report(*model_, [this] { forward(batch_); });
  batch_.clear();
  return report;
}

void Trainer::run_step() {
  batch_ = fetch_batch();
  gpu_clock_.step_begins();
  const at::Tensor total = sum_losses(forward(batch_));
  backward(total);
  synchronize_gradients();
  optimizer_step();
  gpu_clock_.step_ends();
  batch_.clear();
}

void pad_to_largest_over_ranks(std::vector<structures::ModelInput>& batch) {
  int64_t h = 0, w = 0;
  for (const auto& input : batch) {
    h = std::max({h, input.image.size(1), input.min_padded_height});
    w = std::max({w, input.image.size(2), input.min_padded_width});
  }
  for (const at::Tensor& size : distributed::communicator().all_gather(at::tensor({h, w}))) {
    h = std::max(h, size[0].item<int64_t>());
    w = std::max(w, size[1].item<int64_t>());
  }
  for (auto& input : batch) {
    input.min_padded_height = h;
    input.min_padded_width = w;
  }
}

std::vector<structures::ModelInput> Trainer::fetch_batch() {
  const auto start = std::chrono::steady_clock::now();
  batch_files_.clear();  // a batch that cannot be read names none
  std::vector<structures::ModelInput> batch = data_();
  for (const auto& input : batch) batch_files_.push_back(input.file_name);
  if (pad_to_global_batch_ && distributed::get_world_size() > 1) pad_to_largest_over_ranks(batch);
  data_time_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // With several ranks sum_losses records it, as its maximum over the ranks.
  if (distributed::get_world_size() == 1) storage_.put_scalar("data_time", data_time_);
  return batch;
}

structures::LossDict Trainer::forward(const std::vector<structures::ModelInput>& batch) {
  {
    auto gen = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(gen.mutex());
    gen.set_current_seed(iteration_seed(seed_, iter_, distributed::get_rank()));
  }
  // What the model records of its step (Detectron2's rpn/num_pos_anchors, fast_rcnn/*, ...).
  EventScalarScope model_scalars([this](const std::string& name, double value, bool hint) {
    storage_.put_scalar(name, value, hint);
  });
  return model_->losses(batch);
}

namespace {
// Several ranks, in one all-gather: each loss becomes its mean over the ranks (the metrics
// Detectron2 records), the total their sum, `data_time` its maximum (the slowest rank's wait is
// everyone's), and `where` names the ranks whose own total was not finite, so that every rank
// stops at the same step with the same error instead of waiting for the others.
void reduce_over_ranks(std::map<std::string, double>& values, double& total, double& data_time,
                       std::string& where) {
  const int world = distributed::get_world_size();
  const int64_t n = static_cast<int64_t>(values.size());
  at::Tensor mine = at::empty({n + 2}, at::kDouble);
  double* d = mine.data_ptr<double>();
  int64_t i = 0;
  for (const auto& [name, v] : values) d[i++] = v;
  d[n] = std::isfinite(total) ? 0.0 : 1.0;
  d[n + 1] = data_time;
  const std::vector<at::Tensor> all = distributed::communicator().all_gather(mine);
  for (auto& [name, v] : values) v = 0;
  total = 0;
  data_time = 0;
  std::string ranks;
  for (int r = 0; r < world; ++r) {
    const double* x = all[r].data_ptr<double>();
    i = 0;
    for (auto& [name, v] : values) v += x[i++] / world;
    if (x[n] != 0) ranks += (ranks.empty() ? "" : ", ") + std::to_string(r);
    data_time = std::max(data_time, x[n + 1]);
  }
  for (const auto& [name, v] : values) total += v;
  if (!ranks.empty()) {
    where = " on rank " + ranks + " (the means over the ranks follow)";
    total = std::numeric_limits<double>::quiet_NaN();
  }
}
}  // namespace

at::Tensor Trainer::sum_losses(const structures::LossDict& losses) {
  at::Tensor total;
  std::map<std::string, double> values;
  for (const auto& [name, loss] : losses) {
    total = total.defined() ? total + loss : loss;
    values[name] = loss.item<double>();
  }
  if (!total.defined()) throw Error("the model returned no losses");
  double total_value = total.item<double>();
  std::string where;
  if (distributed::get_world_size() > 1) {
    double data_time = data_time_;
    reduce_over_ranks(values, total_value, data_time, where);
    storage_.put_scalar("data_time", data_time);
  }
  if (!std::isfinite(total_value)) {
    std::ostringstream terms;
    for (const auto& [name, v] : values) terms << " " << name << "=" << v;
    throw Error("loss became infinite or NaN" + where + ":" + terms.str());
  }
  storage_.put_scalar("total_loss", total_value);
  for (const auto& [name, v] : values) storage_.put_scalar(name, v);
  return total;
}

void Trainer::backward(const at::Tensor& total) {
  // Dropping the gradients (PyTorch 2's default) instead of zeroing them: backward then hands
  // each parameter its fresh gradient instead of adding it to zeros. Same values, less work.
  optimizer_.zero_grad(/*set_to_none=*/true);
  if (reducer_) reducer_->prepare();  // its hooks start the all-reduces during backward
  total.backward();
}

void Trainer::synchronize_gradients() {
  if (reducer_) reducer_->finish();
}

void Trainer::optimizer_step() {
  if (!optimizer_.step()) ++skipped_steps_;
}

}  // namespace detkit::engine

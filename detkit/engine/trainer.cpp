#include "detkit/engine/trainer.h"

#include <ATen/ATen.h>
#include <ATen/core/Generator.h>
#include <ATen/CPUGeneratorImpl.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cmath>
#include <sstream>

#include "detkit/utils/error.h"

namespace detkit::engine {

uint64_t iteration_seed(uint64_t seed, int64_t iter) {
  // splitmix64 of (seed, iter): well-mixed, and the same on every run.
  uint64_t z = seed + 0x9e3779b97f4a7c15ULL * static_cast<uint64_t>(iter + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

Trainer::Trainer(std::shared_ptr<modeling::GeneralizedRCNN> model, solver::SGD& optimizer,
                 BatchSource data, uint64_t seed)
    : model_(std::move(model)), optimizer_(optimizer), data_(std::move(data)), seed_(seed) {}

void Trainer::train(int64_t start_iter, int64_t max_iter) {
  start_iter_ = iter_ = start_iter;
  max_iter_ = max_iter;
  storage_.set_iter(start_iter);
  spdlog::info("Starting training from iteration {}", start_iter);
  model_->train();
  for (auto& h : hooks_) h->before_train(*this);
  for (; iter_ < max_iter_; ++iter_) {
    storage_.set_iter(iter_);
    for (auto& h : hooks_) h->before_step(*this);
    run_step();
    for (auto& h : hooks_) h->after_step(*this);
  }
  iter_ = max_iter_ - 1;  // Detectron2's trainer.iter after the loop: the last iteration run
  for (auto& h : hooks_) h->after_train(*this);
}

void Trainer::run_step() {
  using clock = std::chrono::steady_clock;
  auto start = clock::now();
  std::vector<modeling::ModelInput> batch = data_();
  double data_time = std::chrono::duration<double>(clock::now() - start).count();

  {
    auto gen = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(gen.mutex());
    gen.set_current_seed(iteration_seed(seed_, iter_));
  }
  modeling::LossDict losses;
  try {
    losses = model_->losses(batch);
  } catch (const Error& e) {
    throw Error("iteration " + std::to_string(iter_) + ": " + e.what() +
                " (training stopped; the last checkpoint is intact)");
  }
  at::Tensor total;
  std::map<std::string, double> values;
  for (const auto& [name, loss] : losses) {
    total = total.defined() ? total + loss : loss;
    values[name] = loss.item<double>();
  }
  double total_value = total.item<double>();
  if (!std::isfinite(total_value)) {
    std::ostringstream terms;
    for (const auto& [name, v] : values) terms << " " << name << "=" << v;
    throw Error("loss became infinite or NaN at iteration " + std::to_string(iter_) + ":" +
                terms.str() + " (training stopped; the last checkpoint is intact)");
  }
  storage_.put_scalar("data_time", data_time);
  storage_.put_scalar("total_loss", total_value);
  for (const auto& [name, v] : values) storage_.put_scalar(name, v);

  // Dropping the gradients (PyTorch 2's default) instead of zeroing them: backward then hands
  // each parameter its fresh gradient instead of adding it to zeros. Same values, less work.
  optimizer_.zero_grad(/*set_to_none=*/true);
  total.backward();
  optimizer_.step();
}

}  // namespace detkit::engine

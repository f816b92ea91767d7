#include "detkit/engine/validation_loss.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include "detkit/data/loader.h"
#include "detkit/distributed/comm.h"
#include "detkit/solver/amp.h"
#include "detkit/utils/autocast.h"
#include "detkit/utils/error.h"

namespace detkit::engine {

namespace {
// The seed of the validation pass's loader and in-step sampling: fixed, so every pass sees the
// same batches.
constexpr uint64_t kValidationSeed = 0x5eed;
}  // namespace

ValidationLossHook::ValidationLossHook(const config::CfgNode& cfg, int64_t period)
    : cfg_(cfg), period_(period) {
  const auto test = cfg.get_string_list("DATASETS.TEST");
  if (test.empty())
    throw Error("TEST.VAL_LOSS_PERIOD is " + std::to_string(period) +
                " but DATASETS.TEST is empty: the validation loss needs a dataset with annotations");
  cfg_.defrost();
  std::string names = "(";
  for (const auto& n : test) names += "'" + n + "',";
  cfg_.merge_from_list({"DATASETS.TRAIN", names + ")"});
}

void ValidationLossHook::after_step(Trainer& t) {
  if (period_ <= 0 || (t.iter() + 1) % period_ != 0) return;
  for (const auto& [name, value] : validation_losses(t.model()))
    t.storage().put_scalar("validation/" + name, value, /*smoothing_hint=*/false);
}

std::map<std::string, double> ValidationLossHook::validation_losses(
    modeling::MetaArch& model) const {
  const int rank = distributed::get_rank(), world = distributed::get_world_size();
  auto loader = data::build_detection_train_loader(cfg_, rank, world, kValidationSeed);
  const int64_t global_batch = cfg_.get_int("SOLVER.IMS_PER_BATCH");
  const int64_t images = static_cast<int64_t>(loader->dataset().size());
  const int64_t batches = std::max<int64_t>(1, (images + global_batch - 1) / global_batch);
  const solver::AmpOptions amp = solver::amp_options_from_config(cfg_);

  // Nothing of training may change: buffers (BatchNorm running statistics) and the generator.
  std::vector<at::Tensor> buffers;
  for (const at::Tensor& b : model.buffers()) buffers.push_back(b.detach().clone());
  auto generator = at::detail::getDefaultCPUGenerator();
  const at::Tensor saved_rng = [&] {
    std::lock_guard<std::mutex> lock(generator.mutex());
    return generator.get_state();
  }();
  std::map<std::string, double> sums;
  {
    at::NoGradGuard no_grad;
    for (int64_t b = 0; b < batches; ++b) {
      {
        std::lock_guard<std::mutex> lock(generator.mutex());
        generator.set_current_seed(kValidationSeed + static_cast<uint64_t>(b));
      }
      const auto batch = loader->next_batch();
      structures::LossDict losses;
      {
        const AutocastGuard autocast(amp.enabled, amp.precision, amp.device);
        losses = model.losses(batch);
      }
      double total = 0;
      for (const auto& [name, loss] : losses) {
        const double v = loss.item<double>();
        sums[name] += v;
        total += v;
      }
      sums["total_loss"] += total;
    }
  }
  {
    std::lock_guard<std::mutex> lock(generator.mutex());
    generator.set_state(saved_rng);
  }
  {
    at::NoGradGuard no_grad;
    const auto now = model.buffers();
    for (size_t i = 0; i < buffers.size(); ++i) now[i].copy_(buffers[i]);
  }
  // Means over the batches, then over the ranks (every rank the same number of batches).
  at::Tensor values = at::empty({static_cast<int64_t>(sums.size())}, at::kDouble);
  int64_t i = 0;
  for (const auto& [name, sum] : sums) values[i++] = sum / static_cast<double>(batches);
  if (world > 1) {
    std::vector<at::Tensor> all = {values};
    distributed::communicator().all_reduce_sum(all);
    values = all[0] / world;
  }
  std::map<std::string, double> out;
  i = 0;
  for (const auto& [name, sum] : sums) out[name] = values[i++].item<double>();
  return out;
}

}  // namespace detkit::engine

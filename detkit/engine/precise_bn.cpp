#include "detkit/engine/precise_bn.h"

#include <ATen/ATen.h>
#include <spdlog/spdlog.h>
#include <torch/nn/modules/batchnorm.h>

#include <optional>

#include "detkit/data/loader.h"
#include "detkit/distributed/comm.h"
#include "detkit/layers/norm_input_recorder.h"
#include "detkit/layers/sync_batch_norm.h"
#include "detkit/utils/autocast.h"
#include "detkit/utils/error.h"

namespace detkit::engine {

namespace {

// One BatchNorm layer precise BN updates, whichever class it is.
struct BatchNormLayer {
  std::string name;
  const torch::nn::Module* module;
  at::Tensor running_mean, running_var, num_batches_tracked;
  torch::nn::BatchNormOptions* torch_options = nullptr;  // BatchNorm1d/2d/3d
  layers::NaiveSyncBatchNorm2dImpl* sync = nullptr;      // SyncBN
  std::optional<double> momentum;                        // as found

  void set_momentum(std::optional<double> m) {
    if (torch_options) torch_options->momentum(m);
    if (sync) sync->set_momentum(m.value_or(0.1));
  }
};

template <class Impl>
bool add_torch_batch_norm(torch::nn::Module& m, const std::string& name,
                          std::vector<BatchNormLayer>& out) {
  auto* bn = dynamic_cast<Impl*>(&m);
  if (bn == nullptr) return false;
  if (bn->options.track_running_stats() && bn->running_mean.defined())
    out.push_back({name, bn, bn->running_mean, bn->running_var, bn->num_batches_tracked,
                   &bn->options, nullptr, bn->options.momentum()});
  return true;
}

void add_if_batch_norm(torch::nn::Module& m, const std::string& name,
                       std::vector<BatchNormLayer>& out) {
  if (!m.is_training()) return;
  if (add_torch_batch_norm<torch::nn::BatchNorm1dImpl>(m, name, out) ||
      add_torch_batch_norm<torch::nn::BatchNorm2dImpl>(m, name, out) ||
      add_torch_batch_norm<torch::nn::BatchNorm3dImpl>(m, name, out))
    return;
  if (auto* sync = dynamic_cast<layers::NaiveSyncBatchNorm2dImpl*>(&m))
    out.push_back({name, sync, sync->running_mean, sync->running_var, sync->num_batches_tracked,
                   nullptr, sync, sync->momentum()});
}

std::vector<BatchNormLayer> bn_layers(torch::nn::Module& model) {
  std::vector<BatchNormLayer> out;
  add_if_batch_norm(model, "", out);
  for (const auto& item : model.named_modules(/*name_prefix=*/"", /*include_self=*/false))
    add_if_batch_norm(*item.value(), item.key(), out);
  return out;
}

// The momenta as found come back however the pass ends.
class MomentumOverride {
 public:
  explicit MomentumOverride(std::vector<BatchNormLayer>& layers) : layers_(layers) {
    // Momentum 1: the running statistics become each batch's own.
    for (auto& layer : layers_) layer.set_momentum(1.0);
  }
  ~MomentumOverride() {
    for (auto& layer : layers_) layer.set_momentum(layer.momentum);
  }
  MomentumOverride(const MomentumOverride&) = delete;
  MomentumOverride& operator=(const MomentumOverride&) = delete;

 private:
  std::vector<BatchNormLayer>& layers_;
};

// The mean and biased variance of all values seen, batches weighted by their counts (fvcore's
// _PopulationVarianceEstimator), in float64.
struct PopulationStatistics {
  at::Tensor mean, square_mean;
  double count = 0;

  void add(const at::Tensor& batch_mean, const at::Tensor& batch_biased_var, double n) {
    const at::Tensor m = batch_mean.to(at::kDouble);
    const at::Tensor square = batch_biased_var.to(at::kDouble) + m * m;
    if (count == 0) {
      mean = at::zeros_like(m);
      square_mean = at::zeros_like(square);
    }
    count += n;
    const double w = n / count;
    mean.add_((m - mean) * w);
    square_mean.add_((square - square_mean) * w);
  }
  at::Tensor var() const { return (square_mean - mean * mean).clamp_min(0); }  // rounding
};

}  // namespace

std::vector<std::string> bn_layer_names(torch::nn::Module& model) {
  std::vector<std::string> names;
  for (const auto& layer : bn_layers(model)) names.push_back(layer.name);
  return names;
}

void update_bn_stats(torch::nn::Module& model, const std::function<void(int64_t)>& forward,
                     int64_t num_iter) {
  std::vector<BatchNormLayer> layers = bn_layers(model);
  if (layers.empty()) return;
  spdlog::info("Computing precise BN statistics for {} BN layers ...", layers.size());
  const int world = distributed::get_world_size();
  // SyncBN with several ranks: the statistics are the global batch's, the variance biased.
  std::vector<size_t> synced;
  for (size_t i = 0; i < layers.size(); ++i)
    if (layers[i].sync && world > 1) synced.push_back(i);

  at::NoGradGuard no_grad;
  const MomentumOverride momentum_one(layers);
  std::vector<PopulationStatistics> stats(layers.size());
  layers::NormInputRecorder recorder;
  for (int64_t k = 0; k < num_iter; ++k) {
    std::vector<at::Tensor> tracked;  // to tell a layer that ran unseen (no device sync here)
    for (const auto& layer : layers) tracked.push_back(layer.num_batches_tracked.clone());
    recorder.clear();
    forward(k);
    // Values per channel each layer normalised in this batch (0: it did not run).
    std::vector<double> counts(layers.size(), 0.0);
    for (size_t i = 0; i < layers.size(); ++i) {
      const auto found = recorder.calls().find(layers[i].module);
      if (found == recorder.calls().end()) {
        if (!layers[i].num_batches_tracked.equal(tracked[i]))
          throw Error("precise BN: BatchNorm layer '" + layers[i].name +
                      "' ran outside layers::Conv2d, so the number of values it normalised is "
                      "unknown (Conv2d with a norm reports it)");
        continue;
      }
      if (found->second.size() > 1)
        throw Error("precise BN: BatchNorm layer '" + layers[i].name + "' ran " +
                    std::to_string(found->second.size()) +
                    " times in one forward pass; its statistics of one batch are those of its "
                    "last call only");
      counts[i] = static_cast<double>(found->second.front());
    }
    if (!synced.empty()) {  // the global batch's counts: every rank weighs it the same
      std::vector<double> mine;
      for (size_t i : synced) mine.push_back(counts[i]);
      std::vector<at::Tensor> sums = {at::tensor(mine, at::kDouble)};
      distributed::communicator().all_reduce_sum(sums);
      const at::Tensor total = sums[0].contiguous();
      for (size_t j = 0; j < synced.size(); ++j) counts[synced[j]] = total.data_ptr<double>()[j];
    }
    for (size_t i = 0; i < layers.size(); ++i) {
      const double n = counts[i];
      if (n <= 0) continue;
      const bool biased = layers[i].sync && world > 1;
      const at::Tensor var = biased ? layers[i].running_var : layers[i].running_var * ((n - 1) / n);
      stats[i].add(layers[i].running_mean, var, n);
    }
  }
  std::vector<std::string> unreached;
  for (size_t i = 0; i < layers.size(); ++i) {
    if (stats[i].count == 0) {
      unreached.push_back(layers[i].name);
      continue;
    }
    layers[i].running_mean.copy_(stats[i].mean);
    layers[i].running_var.copy_(stats[i].var());
  }
  if (!unreached.empty())
    spdlog::warn(
        "precise BN: no batch reached {} of {} BatchNorm layers ({}{}): they keep their "
        "statistics",
        unreached.size(), layers.size(), unreached.front(), unreached.size() > 1 ? ", ..." : "");
}

void update_bn_stats(modeling::MetaArch& model, const BatchSource& batches, int64_t num_iter,
                     const solver::AmpOptions& amp) {
  update_bn_stats(
      model,
      [&](int64_t) {
        const std::vector<structures::ModelInput> batch = batches();
        const AutocastGuard autocast(amp.enabled, amp.precision, amp.device);
        model.losses(batch);
      },
      num_iter);
}

PreciseBN::PreciseBN(int64_t period, int64_t num_iter, std::function<BatchSource()> make_batches,
                     solver::AmpOptions amp)
    : period_(period),
      num_iter_(num_iter),
      make_batches_(std::move(make_batches)),
      amp_(std::move(amp)) {}

void PreciseBN::after_step(Trainer& t) {
  const int64_t next = t.iter() + 1;
  if (next == t.max_iter() || (period_ > 0 && next % period_ == 0)) update_stats(t.model());
}

void PreciseBN::update_stats(modeling::MetaArch& model) {
  if (!batches_) batches_ = make_batches_();
  spdlog::info(
      "Running precise-BN for {} iterations...  Note that this could produce different "
      "statistics every time.",
      num_iter_);
  int64_t fetched = 0;
  update_bn_stats(
      model,
      [&] {
        if (++fetched % 100 == 0)
          spdlog::info("Running precise-BN ... {}/{} iterations.", fetched, num_iter_);
        return batches_();
      },
      num_iter_, amp_);
}

namespace {
// The hook's batches are a stream of their own: the training seed mixed with this.
constexpr uint64_t kPreciseBNStream = 0x70b5eedc0ffee5edULL;
}  // namespace

std::shared_ptr<PreciseBN> build_precise_bn_hook(const config::CfgNode& cfg,
                                                 modeling::MetaArch& model, uint64_t seed,
                                                 int64_t start_iter) {
  if (!cfg.get_bool("TEST.PRECISE_BN.ENABLED")) return nullptr;
  const int64_t num_iter = cfg.get_int("TEST.PRECISE_BN.NUM_ITER");
  if (num_iter < 1)
    throw Error("TEST.PRECISE_BN.NUM_ITER is " + std::to_string(num_iter) +
                ": precise BN needs at least one batch (or set TEST.PRECISE_BN.ENABLED False)");
  const int64_t period = cfg.get_int("TEST.EVAL_PERIOD");
  if (bn_layer_names(model).empty()) {
    // Detectron2's build_hooks leaves the hook out silently here; detkit says so once.
    spdlog::info(
        "TEST.PRECISE_BN.ENABLED is True, but the model has no BatchNorm layer in training mode "
        "(FrozenBN and GN are none): precise BN will not run");
    return nullptr;
  }
  config::CfgNode loader_cfg = cfg;
  loader_cfg.defrost();
  loader_cfg.merge_from_list({"DATALOADER.NUM_WORKERS", "0"});  // as Detectron2's build_hooks
  // Each run before start_iter took num_iter batches (a run ends in a final one only when it
  // reaches SOLVER.MAX_ITER, which a resumed run has not).
  const int64_t start_batch = period > 0 ? (start_iter / period) * num_iter : 0;
  auto make_batches = [loader_cfg, seed, start_batch]() -> BatchSource {
    const int rank = distributed::get_rank(), world = distributed::get_world_size();
    std::shared_ptr<data::TrainLoader> loader = data::build_detection_train_loader(
        loader_cfg, rank, world, seed ^ kPreciseBNStream, start_batch);
    const bool pad = world > 1 && loader->options().world_size_invariant;
    return [loader, pad] {
      std::vector<structures::ModelInput> batch = loader->next_batch();
      if (pad) pad_to_largest_over_ranks(batch);
      return batch;
    };
  };
  return std::make_shared<PreciseBN>(period, num_iter, std::move(make_batches),
                                     solver::amp_options_from_config(cfg));
}

}  // namespace detkit::engine

#include "detkit/modeling/meta_arch/meta_arch.h"

#include <spdlog/spdlog.h>
#include <torch/cuda.h>

#include <atomic>

#include "detkit/config/unimplemented.h"
#include "detkit/layers/conv2d.h"
#include "detkit/utils/denormals.h"
#include "detkit/utils/error.h"

namespace detkit::modeling {

c10::Device MetaArch::device() const {
  for (const auto& p : parameters()) return p.device();
  for (const auto& b : buffers()) return b.device();
  return c10::Device(c10::kCPU);
}

std::optional<TrainingVisualization> MetaArch::take_training_visualization() {
  visualization_requested_ = false;
  std::optional<TrainingVisualization> taken = std::move(visualization_);
  visualization_.reset();
  return taken;
}

std::vector<structures::Instances> MetaArch::inference(
    const std::vector<structures::ModelInput>& batch) {
  std::vector<structures::Instances> instances;
  for (auto& output : outputs(batch)) {
    if (!output.instances)
      throw Error(name() + " predicts no instances (its outputs are " +
                  (output.panoptic_seg ? "panoptic_seg, " : "") +
                  (output.sem_seg ? "sem_seg" : "none") +
                  "): evaluate it with a semantic or panoptic evaluator");
    instances.push_back(std::move(*output.instances));
  }
  return instances;
}

std::vector<structures::ModelOutput> MetaArch::outputs(
    const std::vector<structures::ModelInput>& batch) {
  std::vector<structures::ModelOutput> out;
  for (auto& instances : inference(batch)) out.push_back({std::move(instances), {}, {}});
  return out;
}

Registry<MetaArchFactory>& meta_arch_registry() {
  static Registry<MetaArchFactory> registry("meta architecture (MODEL.META_ARCHITECTURE)");
  return registry;
}

c10::Device model_device(const config::CfgNode& cfg) {
  const std::string name = cfg.get_string("MODEL.DEVICE");
  const std::string supported =
      torch::cuda::is_available()
          ? "cpu, cuda (" + std::to_string(torch::cuda::device_count()) + " devices)"
          : "cpu only (no CUDA device visible)";
  std::optional<c10::Device> device;
  try {
    device = c10::Device(name);
  } catch (const c10::Error&) {
  }
  if (!device || !(device->is_cpu() || device->is_cuda()))
    throw Error("MODEL.DEVICE '" + name +
                "' is not a device detkit runs on; this build: " + supported);
  if (device->is_cuda() && (!torch::cuda::is_available() ||
                            device->index() >= static_cast<int>(torch::cuda::device_count())))
    throw Error("MODEL.DEVICE '" + name + "' is not available; this build: " + supported);
  return *device;
}

namespace {
std::atomic<bool> logged_conv_algorithm{false};  // said once per process, and on each change

void apply_flush_denormal(bool on) {
  if (on == flush_denormal()) return;
  if (!set_flush_denormal(on))
    spdlog::warn("FLUSH_DENORMAL True: this CPU has no flush-to-zero mode; subnormal floats kept");
  else if (on)
    spdlog::info("FLUSH_DENORMAL True: subnormal floats are flushed to zero (flush-to-zero and "
                 "denormals-are-zero on every thread detkit computes on)");
}
}  // namespace

std::shared_ptr<MetaArch> build_model(const config::CfgNode& cfg) {
  config::check_implemented(cfg);
  const c10::Device device = model_device(cfg);
  const auto algorithm = layers::parse_conv_algorithm(cfg.get_string("CONV_ALGORITHM"));
  if (algorithm != layers::conv_algorithm() || !logged_conv_algorithm.exchange(true))
    spdlog::info("{}", layers::conv_algorithm_report(algorithm));
  layers::set_conv_algorithm(algorithm);
  apply_flush_denormal(cfg.get_bool("FLUSH_DENORMAL"));
  auto model = meta_arch_registry().get(cfg.get_string("MODEL.META_ARCHITECTURE"))(cfg);
  model->to(device);
  return model;
}

}  // namespace detkit::modeling

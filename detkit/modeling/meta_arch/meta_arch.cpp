#include "detkit/modeling/meta_arch/meta_arch.h"

#include <spdlog/spdlog.h>

#include <atomic>

#include "detkit/config/defaults.h"
#include "detkit/config/unimplemented.h"
#include "detkit/layers/conv2d.h"
#include "detkit/utils/cuda_build.h"
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

namespace {
// What this process can run a model on, for MODEL.DEVICE's errors and the log.
std::string supported_devices() {
  const int gpus = visible_gpu_count();
#if DETKIT_WITH_CUDA
  return gpus > 0 ? "cpu, cuda (" + std::to_string(gpus) + (gpus == 1 ? " device)" : " devices)")
                  : "cpu only (no CUDA device visible)";
#else
  return gpus > 0 ? "cpu only (detkit was built without its CUDA kernels)"
                  : "cpu only (no CUDA device visible, and detkit was built without its CUDA "
                    "kernels)";
#endif
}

// MODEL.DEVICE's default follows the GPUs this process sees (config/defaults.h).
[[maybe_unused]] const bool default_device_probe_installed =
    (config::set_default_device_probe(&default_device), true);
}  // namespace

c10::Device model_device(const config::CfgNode& cfg) {
  const std::string name = cfg.get_string("MODEL.DEVICE");
  std::optional<c10::Device> device;
  try {
    device = c10::Device(name);
  } catch (const c10::Error&) {
  }
  if (!device || !(device->is_cpu() || device->is_cuda()))
    throw Error("MODEL.DEVICE '" + name +
                "' is not a device detkit runs on; this build: " + supported_devices());
  if (device->is_cuda() && (default_device() != "cuda" || device->index() >= visible_gpu_count()))
    throw Error("MODEL.DEVICE '" + name + "' is not available; this build: " + supported_devices());
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
  static std::atomic<bool> logged_device{false};  // said once per process
  if (!logged_device.exchange(true))
    spdlog::info("MODEL.DEVICE {}: {}", cfg.get_string("MODEL.DEVICE"),
                 device.is_cuda() ? cuda_build_report() : "the CPU (" + supported_devices() + ")");
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

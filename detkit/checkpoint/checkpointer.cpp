#include "detkit/checkpoint/checkpointer.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <set>

#include "detkit/checkpoint/caffe2_names.h"
#include "detkit/checkpoint/matching_heuristics.h"
#include "detkit/checkpoint/model_zoo.h"
#include "detkit/checkpoint/torch_file.h"
#include "detkit/checkpoint/torchvision_resnet.h"
#include "detkit/utils/error.h"
#include "detkit/utils/file_io.h"
#include "detkit/utils/strings.h"

namespace detkit::checkpoint {
namespace {

namespace fs = std::filesystem;
constexpr const char* kLastCheckpoint = "last_checkpoint";

// Makes the renames in `dir` durable (the files themselves are fsync'd by atomic_write).
void sync_directory(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

// True when every name in `weights` starts with `prefix` (and there is at least one).
bool all_start_with(const TensorDict& weights, const std::string& prefix) {
  for (const auto& [name, tensor] : weights)
    if (name.rfind(prefix, 0) != 0) return false;
  return !weights.empty();
}

// Where the model keeps its ResNet, for torchvision weights; "" for a bare ResNet.
std::string resnet_prefix(const TensorDict& own, const std::string& path) {
  for (const char* prefix : {"backbone.bottom_up.", "backbone.", ""})
    if (own.count(std::string(prefix) + "stem.conv1.weight")) return prefix;
  throw Error("'" + path +
              "' holds torchvision ResNet weights, but the model has no ResNet "
              "stem (looked for backbone.bottom_up.stem.conv1.weight)");
}

// Unexpected names Detectron2 also ignores: buffers that are no longer saved.
bool ignored_like_detectron2(const std::string& name) {
  return name == "pixel_mean" || name == "pixel_std" ||
         name.find("anchor_generator.cell_anchors") != std::string::npos;
}

// FrozenBatchNorm2d modules (weight and running_var are buffers, not parameters) whose weight
// `weights` gives without statistics: add running_mean 0 and running_var 1.
void default_frozen_bn_statistics(const torch::nn::Module& model, TensorDict& weights) {
  const TensorDict own = state_dict(model);
  std::set<std::string> parameters;
  for (const auto& item : model.named_parameters(/*recurse=*/true)) parameters.insert(item.key());
  size_t filled = 0;
  for (const auto& [name, tensor] : own) {
    if (!ends_with(name, ".running_var")) continue;
    const std::string prefix = name.substr(0, name.size() - 11);
    if (parameters.count(prefix + "weight") || !weights.count(prefix + "weight") ||
        weights.count(name) || weights.count(prefix + "running_mean") ||
        !own.count(prefix + "running_mean"))
      continue;
    weights[prefix + "running_mean"] = at::zeros_like(own.at(prefix + "running_mean"));
    weights[name] = at::ones_like(tensor);
    ++filled;
  }
  if (filled > 0)
    spdlog::info(
        "{} FrozenBatchNorm2d layers without running statistics in the file: mean 0, "
        "variance 1",
        filled);
}

}  // namespace

int64_t LoadedCheckpoint::iteration() const {
  auto it = state.find("iteration");
  return it != state.end() && it->second.isInt() ? it->second.toInt() : -1;
}

TensorDict model_weights_from(const c10::IValue& checkpoint, const std::string& path) {
  if (!checkpoint.isGenericDict()) throw Error("'" + path + "' does not hold a dict");
  const c10::impl::GenericDict root = checkpoint.toGenericDict();
  auto model = root.find(c10::IValue("model"));
  const bool nested = model != root.end() && model->value().isGenericDict();
  TensorDict weights;
  for (const auto& entry : nested ? model->value().toGenericDict() : root) {
    const std::string name =
        entry.key().isString() ? entry.key().toStringRef() : "<" + entry.key().tagKind() + " key>";
    if (entry.key().isString() && entry.value().isTensor()) {
      weights[name] = entry.value().toTensor();
    } else if (nested) {
      throw Error("'" + path + "': model entry '" + name + "' is not a tensor");
    } else {
      spdlog::warn("{}: ignoring '{}', which is not a tensor", path, name);
    }
  }
  return weights;
}

LoadReport load_model_weights(torch::nn::Module& model, TensorDict weights, const std::string& path,
                              const WeightsNaming& naming) {
  if (naming.matching_heuristics) {
    RenamedWeights renamed;
    if (naming.caffe2) {
      renamed = convert_caffe2_detectron_names(weights);
    } else {
      renamed.weights = std::move(weights);
    }
    weights = align_to_model(state_dict(model), renamed.weights, renamed.original);
  }
  if (all_start_with(weights, "module.")) {
    TensorDict stripped;
    for (auto& [name, tensor] : weights) stripped[name.substr(7)] = tensor;
    weights = std::move(stripped);
  }
  if (!naming.matching_heuristics && is_torchvision_resnet(weights)) {
    const TensorDict own = state_dict(model);
    const std::string prefix = resnet_prefix(own, path);
    weights = torchvision_resnet_to_detectron2(weights, prefix);
    for (auto it = weights.begin(); it != weights.end();) {  // BN step counters, not weights
      const bool counter = it->first.size() > 20 && it->first.compare(it->first.size() - 20, 20,
                                                                      ".num_batches_tracked") == 0;
      it = counter && !own.count(it->first) ? weights.erase(it) : std::next(it);
    }
    spdlog::info(
        "{}: torchvision ResNet weights mapped onto '{}' (they expect "
        "MODEL.RESNETS.STRIDE_IN_1X1 False and torchvision's RGB pixel normalisation)",
        path, prefix);
  }
  if (naming.versionless) default_frozen_bn_statistics(model, weights);
  LoadReport report = load_state_dict(model, weights);
  auto& unexpected = report.unexpected;
  unexpected.erase(std::remove_if(unexpected.begin(), unexpected.end(), ignored_like_detectron2),
                   unexpected.end());
  if (report.complete()) {
    spdlog::info("Loaded {} tensors from {}", report.loaded, path);
  } else {
    spdlog::warn("Loading {}: {}", path, report.summary());
  }
  return report;
}

Checkpointer::Checkpointer(std::shared_ptr<torch::nn::Module> model, std::string output_dir,
                           bool save_to_disk)
    : model_(std::move(model)), output_dir_(std::move(output_dir)), save_to_disk_(save_to_disk) {
  if (!model_) throw Error("Checkpointer needs a model");
}

std::string Checkpointer::save(const std::string& name, const CheckpointState& state) {
  if (!save_to_disk_) return "";
  c10::Dict<std::string, at::Tensor> model;
  for (const auto& [key, tensor] : state_dict(*model_)) model.insert(key, tensor);
  if (auto replaced = state.find("model"); replaced != state.end()) {
    if (!replaced->second.isGenericDict())
      throw Error("checkpoint state's 'model' entry must be a dict of tensors by model name");
    for (const auto& entry : replaced->second.toGenericDict()) {
      const std::string key = entry.key().toStringRef();
      auto it = model.find(key);
      if (it == model.end() || !entry.value().isTensor() ||
          !entry.value().toTensor().sizes().equals(it->value().sizes()))
        throw Error("checkpoint state's 'model' entry replaces '" + key +
                    "', which is not a model tensor of that shape");
      model.insert_or_assign(key, entry.value().toTensor());
    }
  }
  std::error_code error;
  fs::create_directories(output_dir_, error);
  if (error) throw Error("cannot create '" + output_dir_ + "': " + error.message());
  c10::impl::GenericDict checkpoint(c10::StringType::get(), c10::AnyType::get());
  checkpoint.insert("model", model);
  for (const auto& [key, value] : state)
    if (key != "model") checkpoint.insert(key, value);
  const std::string file = name + ".pth";
  const std::string path = (fs::path(output_dir_) / file).string();
  save_torch_file(path, checkpoint);
  atomic_write((fs::path(output_dir_) / kLastCheckpoint).string(), file);
  sync_directory(output_dir_);
  spdlog::info("Saved checkpoint to {}", path);
  return path;
}

bool Checkpointer::has_checkpoint() const {
  return fs::exists(fs::path(output_dir_) / kLastCheckpoint);
}

std::string Checkpointer::last_checkpoint() const {
  const fs::path tag = fs::path(output_dir_) / kLastCheckpoint;
  if (!fs::exists(tag)) return "";
  std::string name = read_file(tag.string());
  while (!name.empty() && std::isspace(static_cast<unsigned char>(name.back()))) name.pop_back();
  if (name.empty()) throw Error("'" + tag.string() + "' is empty");
  return (fs::path(output_dir_) / name).string();
}

LoadedCheckpoint Checkpointer::load(const std::string& path, bool with_state) {
  spdlog::info("Loading checkpoint from {}", path);
  WeightsFile file = fetch_weights(path);
  LoadedCheckpoint loaded;
  loaded.path = path;
  WeightsNaming naming;
  naming.matching_heuristics = file.matching_heuristics;
  naming.caffe2 = file.caffe2_names();
  naming.versionless = file.is_pickle();
  loaded.report = load_model_weights(*model_, std::move(file.model), file.path, naming);
  if (with_state && !file.is_pickle()) {
    for (const auto& entry : file.content.toGenericDict()) {
      if (entry.key().isString() && entry.key().toStringRef() != "model")
        loaded.state[entry.key().toStringRef()] = entry.value();
    }
  }
  return loaded;
}

LoadedCheckpoint Checkpointer::resume_or_load(const std::string& weights, bool resume) {
  if (resume && has_checkpoint()) {
    LoadedCheckpoint loaded = load(last_checkpoint(), /*with_state=*/true);
    loaded.resumed = true;
    return loaded;
  }
  if (weights.empty()) {
    spdlog::info("No checkpoint found. Initializing model from scratch");
    return {};
  }
  return load(weights, /*with_state=*/false);
}

}  // namespace detkit::checkpoint

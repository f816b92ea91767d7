#pragma once
// Detectron2's Checkpointer: OUTPUT_DIR/<name>.pth holds {"model": state dict, "optimizer": ...,
// "scheduler": ..., "iteration": N}; OUTPUT_DIR/last_checkpoint names the newest file.
// resume_or_load continues from last_checkpoint (model and trainer state) or loads MODEL.WEIGHTS
// (model only: detkit/Detectron2 .pth checkpoints, flat state dicts, torchvision ResNets,
// Detectron2 model-zoo and Caffe2 .pkl files).
#include <ATen/core/ivalue.h>
#include <torch/nn/module.h>

#include <map>
#include <memory>
#include <string>

#include "detkit/checkpoint/state_dict.h"

namespace detkit::checkpoint {

/// What a checkpoint holds besides "model": "optimizer", "scheduler", "iteration", ... (values
/// as torch.load shows them: dicts (see make_dict), lists, numbers, strings, tensors).
using CheckpointState = std::map<std::string, c10::IValue>;

struct LoadedCheckpoint {
  std::string path;       // the file loaded; "" when none was
  bool resumed = false;   // true when it came from last_checkpoint with resume
  LoadReport report;      // how the file's model tensors fit the model
  CheckpointState state;  // when resumed: every entry but "model"; otherwise empty
  /// state["iteration"], or -1 when absent: training continues at iteration() + 1.
  int64_t iteration() const;
};

/// The model tensors of a loaded file: its "model" entry (detkit and Detectron2 checkpoints) or
/// the file itself when it is a flat state dict (non-tensor entries skipped with a warning).
TensorDict model_weights_from(const c10::IValue& checkpoint, const std::string& path);

/// How the names of a weights file relate to the model's (see weights_file.h).
struct WeightsNaming {
  bool matching_heuristics = false;  // fit names with align_to_model first
  bool caffe2 = false;               // convert Caffe2 blob names before matching
  /// The file carries no module versions (pickles): a FrozenBatchNorm2d whose weight it gives
  /// without running statistics gets mean 0 and variance 1, as Detectron2's FrozenBatchNorm2d
  /// loads version-less state.
  bool versionless = false;
};

/// Loads `weights` into `model` as Detectron2's DetectionCheckpointer does: Caffe2 names
/// converted and names matched when `naming` says so, a "module." prefix on every name
/// stripped, torchvision ResNet names mapped onto the model's ResNet (backbone.bottom_up. or
/// backbone.), shape mismatches not loaded. Logs and returns the report.
LoadReport load_model_weights(torch::nn::Module& model, TensorDict weights, const std::string& path,
                              const WeightsNaming& naming = {});

class Checkpointer {
 public:
  /// Saves `model` under "model" to `output_dir` (created on first save). Processes other than
  /// rank 0 pass save_to_disk = false: save() then writes nothing.
  Checkpointer(std::shared_ptr<torch::nn::Module> model, std::string output_dir,
               bool save_to_disk = true);

  /// Writes output_dir/<name>.pth = {"model": ..., **state} (temporary file, fsync, rename),
  /// then last_checkpoint = "<name>.pth". Returns the path ("" when not saving to disk). A
  /// "model" entry of `state` (a dict of tensors) replaces the model's tensors of those names
  /// (mixed precision's fp32 masters of reduced-precision weights); a name that is not a model
  /// tensor of that shape is a detkit::Error.
  std::string save(const std::string& name, const CheckpointState& state = {});

  bool has_checkpoint() const;
  /// The file last_checkpoint names (full path); "" when there is none.
  std::string last_checkpoint() const;

  /// Loads `path`'s model weights; with `with_state` also returns its other entries.
  LoadedCheckpoint load(const std::string& path, bool with_state);

  /// With `resume` and a last_checkpoint: load it with its state (resumed = true). Otherwise
  /// load the model weights of `weights` (MODEL.WEIGHTS); nothing when it is "".
  LoadedCheckpoint resume_or_load(const std::string& weights, bool resume);

  const std::string& output_dir() const { return output_dir_; }
  bool save_to_disk() const { return save_to_disk_; }

 private:
  std::shared_ptr<torch::nn::Module> model_;
  std::string output_dir_;
  bool save_to_disk_;
};

}  // namespace detkit::checkpoint

#pragma once
// What MODEL.WEIGHTS may name, told apart by content, not by extension: torch.save archives
// (detkit, Detectron2 .pth, torchvision ResNets), Detectron2 model-zoo .pkl files
// ({"model": name -> array, "__author__": ..., optionally "matching_heuristics"}) and Caffe2 /
// Detectron1 .pkl files (name -> array, optionally under "blobs"; written by Python 2) — read as
// Detectron2's DetectionCheckpointer reads them.
#include <ATen/core/ivalue.h>

#include <string>

#include "detkit/checkpoint/state_dict.h"

namespace detkit::checkpoint {

enum class WeightsFormat { kTorch, kDetectron2Pickle, kCaffe2Pickle };

struct WeightsFile {
  std::string path;  // the local file read
  WeightsFormat format = WeightsFormat::kTorch;
  c10::IValue content;  // the whole file as read (torch files: their dict with "model" and state)
  TensorDict model;     // the model tensors under the file's names (Caffe2: "_momentum" dropped)
  bool matching_heuristics = false;  // the file asks for name matching (always for Caffe2)
  std::string author;                // "__author__" ("Caffe2" for Caffe2 files)
  bool is_pickle() const { return format != WeightsFormat::kTorch; }
  /// Caffe2 names must be converted to Detectron2's before matching.
  bool caffe2_names() const { return format == WeightsFormat::kCaffe2Pickle; }
};

/// Reads `path`; throws detkit::Error naming the file (and the entry) for anything else:
/// protocol 0/1 pickles, pickles that are not dicts, model entries that are not arrays.
WeightsFile read_weights_file(const std::string& path);

/// The value a .pkl file holds (restricted_unpickle: numpy arrays become tensors).
c10::IValue load_pickle_bytes(std::string_view bytes, const std::string& path);

}  // namespace detkit::checkpoint

#pragma once
// The Detectron2 reference fixture (../shared/fixtures/detectron2): its config, weights and
// outputs, loaded once per test binary.
#include <ATen/ATen.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "detkit/checkpoint/state_dict.h"
#include "detkit/config/defaults.h"
#include "detkit/structures/image_list.h"
#include "detkit/structures/model_io.h"

namespace detkit::testing {

struct Detectron2Fixture {
  std::string dir = std::string(DETKIT_SHARED_DIR) + "/fixtures/detectron2/";
  bool present() const { return std::filesystem::exists(dir + "weights.pth"); }

  /// The fixture's config; MODEL.DEVICE from $DETKIT_TEST_DEVICE where set (scripts/gpu_check.sh
  /// runs the parity tests with "cuda": the model on the GPU, compared with the CPU fixtures).
  config::CfgNode config() const {
    config::CfgNode cfg = config::get_cfg();
    cfg.merge_from_file(dir + "config.yaml");
    if (const char* device = std::getenv("DETKIT_TEST_DEVICE"); device && *device)
      cfg.merge_from_list({"MODEL.DEVICE", device});
    return cfg;
  }
  const checkpoint::TensorDict& weights() {
    if (weights_.empty()) weights_ = checkpoint::load_plain_tensor_dict(dir + "weights.pth");
    return weights_;
  }
  const checkpoint::TensorDict& outputs() {
    if (outputs_.empty()) outputs_ = checkpoint::load_plain_tensor_dict(dir + "outputs.pth");
    return outputs_;
  }
  /// The weights whose names start with `prefix`.
  checkpoint::TensorDict weights_under(const std::string& prefix) {
    checkpoint::TensorDict out;
    for (const auto& [k, v] : weights())
      if (k.rfind(prefix, 0) == 0) out[k] = v;
    return out;
  }
  /// The two test images as the test mapper gave them to Detectron2, with their original sizes
  /// (outputs.json): the model's inference inputs.
  std::vector<structures::ModelInput> inference_batch() {
    const nlohmann::json meta = nlohmann::json::parse(std::ifstream(dir + "outputs.json"));
    std::vector<structures::ModelInput> batch(2);
    for (int i = 0; i < 2; ++i) {
      batch[i].image = outputs().at("input_tensor_" + std::to_string(i));
      batch[i].height = meta["images"][i]["height"];
      batch[i].width = meta["images"][i]["width"];
    }
    return batch;
  }
  /// The two test images, normalised with the config's pixel mean and std, padded to `div`.
  structures::ImageList normalized_inputs(const config::CfgNode& cfg, int64_t div,
                                          const std::string& prefix = "input_tensor_") {
    auto mean = at::tensor(cfg.get_float_list("MODEL.PIXEL_MEAN"), at::kFloat).reshape({-1, 1, 1});
    auto std = at::tensor(cfg.get_float_list("MODEL.PIXEL_STD"), at::kFloat).reshape({-1, 1, 1});
    std::vector<at::Tensor> images;
    for (int i = 0; i < 2; ++i)
      images.push_back((outputs().at(prefix + std::to_string(i)) - mean) / std);
    return structures::ImageList::from_tensors(images, div);
  }

 private:
  checkpoint::TensorDict weights_, outputs_;
};

}  // namespace detkit::testing

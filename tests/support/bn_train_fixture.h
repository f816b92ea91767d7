#pragma once
// The Detectron2 multi-step fixture (../shared/fixtures/detectron2_bn_train): a narrowed Mask
// R-CNN with trainable BatchNorm, Detectron2's own initialisation, and 12 consecutive SGD steps on
// one two-image batch, once with the 1000-iteration warm-up ("warmup1000") and once at a constant
// LR 0.01 ("warmup0"). Its README gives the run-to-run tolerances the tests use.
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "detkit/checkpoint/state_dict.h"
#include "detkit/config/defaults.h"

namespace detkit::testing {

struct BnTrainFixture {
  std::string dir = std::string(DETKIT_SHARED_DIR) + "/fixtures/detectron2_bn_train/";
  bool present() const { return std::filesystem::exists(dir + "outputs.pth"); }

  /// "warmup1000" reads config.yaml, "warmup0" config_warmup0.yaml (WARMUP_ITERS 0).
  config::CfgNode config(const std::string& sequence) const {
    config::CfgNode cfg = config::get_cfg();
    cfg.merge_from_file(dir + (sequence == "warmup0" ? "config_warmup0.yaml" : "config.yaml"));
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
  const nlohmann::json& meta() {
    if (meta_.is_null()) meta_ = nlohmann::json::parse(std::ifstream(dir + "outputs.json"));
    return meta_;
  }
  /// meta()["sequences"][sequence]["steps"][step]
  const nlohmann::json& step(const std::string& sequence, size_t step) {
    return meta()["sequences"][sequence]["steps"][step];
  }

 private:
  checkpoint::TensorDict weights_, outputs_;
  nlohmann::json meta_;
};

}  // namespace detkit::testing

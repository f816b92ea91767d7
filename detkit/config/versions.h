#pragma once
// Detectron2's config versions: a YAML file written for version 0 or 1 (older key names) is read
// by upgrading its keys to the latest names, as Detectron2's merge_from_file does.
#include <string>
#include <vector>

namespace detkit::config {

constexpr int kLatestConfigVersion = 2;

struct KeyRename {
  int version;           // the version that renamed the key
  std::string old_name;  // its name before that version
  std::string new_name;
};

/// Every rename, in version order (Detectron2's compat.py). The anchors' move to
/// MODEL.ANCHOR_GENERATOR in version 2 is not here: which old key it takes depends on the
/// meta-architecture (see upgraded_anchor_key).
const std::vector<KeyRename>& config_key_renames();

/// The latest name of `key` as a config of `version` names it (MODEL.RPN_HEAD.NAME at version 0
/// is MODEL.RPN.HEAD_NAME); `key` itself where no rename applies.
std::string upgrade_key(std::string key, int version);

/// For a config older than version 2: MODEL.ANCHOR_GENERATOR.SIZES / ASPECT_RATIOS where `key`
/// is the anchors' old key of the family `meta_architecture` uses (MODEL.RETINANET.ANCHOR_SIZES
/// for RetinaNet, MODEL.RPN.ANCHOR_SIZES otherwise), "" for the other family's (which
/// Detectron2's upgrade drops), and `key` itself for any other key.
std::string upgraded_anchor_key(const std::string& key, const std::string& meta_architecture);

/// Whether `key` is one of the four old anchor keys.
bool is_old_anchor_key(const std::string& key);

}  // namespace detkit::config

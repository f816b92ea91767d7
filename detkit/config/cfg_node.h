#pragma once
// CfgNode: Detectron2's config tree. Keys are dotted paths ("MODEL.RPN.NMS_THRESH"); every leaf
// has the type of its default, and a value that does not fit is refused with the key's name.
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "detkit/config/cfg_value.h"

namespace detkit::config {

class CfgNode {
 public:
  CfgNode() = default;
  CfgNode(const CfgNode& other);
  CfgNode& operator=(const CfgNode& other);
  CfgNode(CfgNode&&) = default;
  CfgNode& operator=(CfgNode&&) = default;

  /// Declares a key with its default (creating sections on the way). A None default needs
  /// `declared`, the type that later values must have (None stays allowed for such keys).
  void define(const std::string& key, CfgValue default_value,
              std::optional<CfgValue::Kind> declared = std::nullopt);

  bool has(const std::string& key) const;  // a leaf or a section
  const CfgValue& get(const std::string& key) const;
  const CfgNode& section(const std::string& key) const;

  // Typed reads; errors name the key.
  bool get_bool(const std::string& key) const;
  int64_t get_int(const std::string& key) const;
  double get_float(const std::string& key) const;
  std::string get_string(const std::string& key) const;
  std::vector<int64_t> get_int_list(const std::string& key) const;
  std::vector<double> get_float_list(const std::string& key) const;
  std::vector<std::string> get_string_list(const std::string& key) const;

  /// Replaces a leaf's value after checking it fits the leaf's type (ints widen to floats,
  /// tuples and lists are one type). `source` names where the value came from, for messages.
  void set(const std::string& key, const CfgValue& value, const std::string& source = "code");

  /// Loads a Detectron2 YAML file (following its _BASE_ chain, paths relative to the including
  /// file) over this tree.
  void merge_from_file(const std::string& path);

  /// Applies command-line overrides: KEY VALUE KEY VALUE ..., values read as Python literals.
  void merge_from_list(const std::vector<std::string>& key_values);

  void freeze() { frozen_ = true; }
  /// Allows set() again (Detectron2's defrost), as auto_scale_workers does on its copy.
  void defrost() { frozen_ = false; }
  bool is_frozen() const { return frozen_; }

  /// YAML text with keys sorted, as Detectron2's cfg.dump() writes; merge_from_file of it
  /// reproduces this tree.
  std::string dump() const;

  /// Every leaf key, dotted and sorted.
  std::vector<std::string> leaf_keys() const;

  bool operator==(const CfgNode& other) const;
  bool operator!=(const CfgNode& other) const { return !(*this == other); }

 private:
  struct Leaf {
    CfgValue value;
    CfgValue::Kind type;
    bool nullable;
  };
  friend struct YamlIO;  // yaml_io.cpp: loading and dumping

  const Leaf* find_leaf(const std::string& key) const;
  const CfgNode* find_section(const std::string& key) const;
  [[noreturn]] void unknown_key(const std::string& key, const std::string& source) const;
  void apply_overrides(const std::vector<std::string>& key_values, const std::string& source);
  void collect_leaf_keys(const std::string& prefix, std::vector<std::string>& out) const;

  std::map<std::string, Leaf> leaves_;
  std::map<std::string, std::unique_ptr<CfgNode>> sections_;
  bool frozen_ = false;
};

/// While one lives, every key read through CfgNode::get() (the typed reads included) from any
/// CfgNode is recorded: how a test proves which keys the code reads. One at a time per process.
class KeyReadRecorder {
 public:
  KeyReadRecorder();
  ~KeyReadRecorder();
  KeyReadRecorder(const KeyReadRecorder&) = delete;
  KeyReadRecorder& operator=(const KeyReadRecorder&) = delete;

  std::set<std::string> keys() const;
  void record(const std::string& key);

 private:
  mutable std::mutex mutex_;
  std::set<std::string> keys_;
};

/// Checks `value` against a leaf's type and returns it converted (int -> float, also inside
/// lists). Throws detkit::Error naming `key` and `source` when it does not fit.
CfgValue coerce_to_type(const CfgValue& value, const CfgValue& default_value,
                        CfgValue::Kind type, bool nullable, const std::string& key,
                        const std::string& source);

}  // namespace detkit::config

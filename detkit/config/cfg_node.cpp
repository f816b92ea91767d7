#include "detkit/config/cfg_node.h"

#include <algorithm>
#include <atomic>

#include "detkit/utils/error.h"
#include "detkit/utils/strings.h"

namespace detkit::config {

CfgNode::CfgNode(const CfgNode& other) : leaves_(other.leaves_), frozen_(other.frozen_) {
  for (const auto& [name, child] : other.sections_)
    sections_[name] = std::make_unique<CfgNode>(*child);
}

CfgNode& CfgNode::operator=(const CfgNode& other) {
  if (this != &other) *this = CfgNode(other);
  return *this;
}

void CfgNode::define(const std::string& key, CfgValue default_value,
                     std::optional<CfgValue::Kind> declared) {
  auto parts = split(key, '.');
  CfgNode* node = this;
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    auto& child = node->sections_[parts[i]];
    if (!child) child = std::make_unique<CfgNode>();
    node = child.get();
  }
  bool nullable = default_value.is_null();
  if (nullable && !declared) throw Error("config key '" + key + "' has a None default but no type");
  CfgValue::Kind type = declared ? *declared : default_value.kind();
  node->leaves_[parts.back()] = Leaf{std::move(default_value), type, nullable};
}

const CfgNode* CfgNode::find_section(const std::string& key) const {
  const CfgNode* node = this;
  for (const auto& part : split(key, '.')) {
    auto it = node->sections_.find(part);
    if (it == node->sections_.end()) return nullptr;
    node = it->second.get();
  }
  return node;
}

const CfgNode::Leaf* CfgNode::find_leaf(const std::string& key) const {
  size_t dot = key.rfind('.');
  const CfgNode* node = dot == std::string::npos ? this : find_section(key.substr(0, dot));
  if (!node) return nullptr;
  auto it = node->leaves_.find(dot == std::string::npos ? key : key.substr(dot + 1));
  return it == node->leaves_.end() ? nullptr : &it->second;
}

void CfgNode::unknown_key(const std::string& key, const std::string& source) const {
  std::string message = "unknown config key '" + key + "'";
  if (!source.empty()) message += " in " + source;
  std::string suggestion = closest_match(key, leaf_keys());
  if (!suggestion.empty()) message += " (did you mean '" + suggestion + "'?)";
  throw Error(message);
}

bool CfgNode::has(const std::string& key) const {
  return find_leaf(key) != nullptr || find_section(key) != nullptr;
}

namespace {
std::atomic<KeyReadRecorder*> g_recorder{nullptr};
}  // namespace

KeyReadRecorder::KeyReadRecorder() {
  KeyReadRecorder* none = nullptr;
  if (!g_recorder.compare_exchange_strong(none, this))
    throw Error("a KeyReadRecorder is already recording");
}

KeyReadRecorder::~KeyReadRecorder() { g_recorder.store(nullptr); }

std::set<std::string> KeyReadRecorder::keys() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return keys_;
}

void KeyReadRecorder::record(const std::string& key) {
  std::lock_guard<std::mutex> lock(mutex_);
  keys_.insert(key);
}

const CfgValue& CfgNode::get(const std::string& key) const {
  const Leaf* leaf = find_leaf(key);
  if (!leaf) unknown_key(key, "");
  if (KeyReadRecorder* recorder = g_recorder.load(std::memory_order_relaxed))
    recorder->record(key);
  return leaf->value;
}

const CfgNode& CfgNode::section(const std::string& key) const {
  const CfgNode* node = find_section(key);
  if (!node) throw Error("unknown config section '" + key + "'");
  return *node;
}

namespace {
template <typename F>
auto read_as(const CfgNode& cfg, const std::string& key, F f) {
  const CfgValue& v = cfg.get(key);
  try {
    return f(v);
  } catch (const Error& e) {
    throw Error("config key '" + key + "': " + e.what());
  }
}
}  // namespace

bool CfgNode::get_bool(const std::string& key) const {
  return read_as(*this, key, [](const CfgValue& v) { return v.as_bool(); });
}
int64_t CfgNode::get_int(const std::string& key) const {
  return read_as(*this, key, [](const CfgValue& v) { return v.as_int(); });
}
double CfgNode::get_float(const std::string& key) const {
  return read_as(*this, key, [](const CfgValue& v) { return v.as_float(); });
}
std::string CfgNode::get_string(const std::string& key) const {
  return read_as(*this, key, [](const CfgValue& v) { return v.as_string(); });
}
std::vector<int64_t> CfgNode::get_int_list(const std::string& key) const {
  return read_as(*this, key, [](const CfgValue& v) { return v.as_int_list(); });
}
std::vector<double> CfgNode::get_float_list(const std::string& key) const {
  return read_as(*this, key, [](const CfgValue& v) { return v.as_float_list(); });
}
std::vector<std::string> CfgNode::get_string_list(const std::string& key) const {
  return read_as(*this, key, [](const CfgValue& v) { return v.as_string_list(); });
}

namespace {

// The kind of the first scalar inside a (possibly nested) list, or Null when there is none.
CfgValue::Kind scalar_kind(const CfgValue& v) {
  if (v.kind() != CfgValue::Kind::List) return v.kind();
  for (const auto& item : v.as_list()) {
    auto kind = scalar_kind(item);
    if (kind != CfgValue::Kind::Null) return kind;
  }
  return CfgValue::Kind::Null;
}

bool fits_scalar(const CfgValue& v, CfgValue::Kind type) {
  return v.kind() == type || (type == CfgValue::Kind::Float && v.kind() == CfgValue::Kind::Int);
}

// Converts every scalar of a nested list to `type`; false when one does not fit.
bool coerce_list(const CfgValue& v, CfgValue::Kind type, CfgValue& out) {
  if (v.kind() != CfgValue::Kind::List) {
    if (type == CfgValue::Kind::Null) {
      out = v;
      return true;
    }
    if (!fits_scalar(v, type)) return false;
    out = type == CfgValue::Kind::Float ? CfgValue(v.as_float()) : v;
    return true;
  }
  std::vector<CfgValue> items;
  for (const auto& item : v.as_list()) {
    CfgValue converted;
    if (!coerce_list(item, type, converted)) return false;
    items.push_back(std::move(converted));
  }
  out = CfgValue::list(std::move(items));
  return true;
}

}  // namespace

CfgValue coerce_to_type(const CfgValue& value, const CfgValue& default_value,
                        CfgValue::Kind type, bool nullable, const std::string& key,
                        const std::string& source) {
  auto mismatch = [&](const std::string& expected) -> Error {
    return Error("config key '" + key + "' in " + source + ": expected " + expected + ", got " +
                 kind_name(value.kind()) + " " + value.repr());
  };
  if (value.is_null()) {
    if (nullable) return value;
    throw mismatch(std::string(kind_name(type)) + " (None is not allowed here)");
  }
  if (type == CfgValue::Kind::List) {
    if (value.kind() != CfgValue::Kind::List) throw mismatch("a list");
    auto element = scalar_kind(default_value);
    CfgValue out;
    if (!coerce_list(value, element, out))
      throw mismatch(std::string("a list of ") + kind_name(element) + " values");
    return out;
  }
  if (!fits_scalar(value, type)) throw mismatch(std::string("a ") + kind_name(type));
  return type == CfgValue::Kind::Float ? CfgValue(value.as_float()) : value;
}

void CfgNode::set(const std::string& key, const CfgValue& value, const std::string& source) {
  if (frozen_) throw Error("cannot set config key '" + key + "': the config is frozen");
  const Leaf* found = find_leaf(key);
  if (!found) unknown_key(key, source);
  Leaf* leaf = const_cast<Leaf*>(found);
  leaf->value = coerce_to_type(value, leaf->value, leaf->type, leaf->nullable, key, source);
}

void CfgNode::merge_from_list(const std::vector<std::string>& key_values) {
  const std::string source = "command-line overrides";
  CfgNode merged(*this);  // all or nothing: an error leaves this tree as it was
  merged.apply_overrides(key_values, source);
  *this = std::move(merged);
}

void CfgNode::apply_overrides(const std::vector<std::string>& key_values,
                              const std::string& source) {
  if (key_values.size() % 2 != 0)
    throw Error("config overrides must be KEY VALUE pairs; '" + key_values.back() +
                "' has no value");
  for (size_t i = 0; i < key_values.size(); i += 2) {
    const std::string& key = key_values[i];
    const std::string& text = key_values[i + 1];
    const Leaf* leaf = find_leaf(key);
    if (!leaf) unknown_key(key, source);
    CfgValue value = parse_literal(text);
    // A string key takes the text as written, so `OUTPUT_DIR 2024` means the folder "2024".
    if (leaf->type == CfgValue::Kind::String && value.kind() != CfgValue::Kind::List &&
        !value.is_null())
      value = CfgValue(value.kind() == CfgValue::Kind::String ? value.as_string() : text);
    set(key, value, source);
  }
}

void CfgNode::collect_leaf_keys(const std::string& prefix, std::vector<std::string>& out) const {
  for (const auto& [name, leaf] : leaves_) out.push_back(prefix + name);
  for (const auto& [name, child] : sections_) child->collect_leaf_keys(prefix + name + ".", out);
}

std::vector<std::string> CfgNode::leaf_keys() const {
  std::vector<std::string> keys;
  collect_leaf_keys("", keys);
  std::sort(keys.begin(), keys.end());
  return keys;
}

bool CfgNode::operator==(const CfgNode& other) const {
  if (leaves_.size() != other.leaves_.size() || sections_.size() != other.sections_.size())
    return false;
  for (const auto& [name, leaf] : leaves_) {
    auto it = other.leaves_.find(name);
    if (it == other.leaves_.end() || it->second.value != leaf.value) return false;
  }
  for (const auto& [name, child] : sections_) {
    auto it = other.sections_.find(name);
    if (it == other.sections_.end() || *it->second != *child) return false;
  }
  return true;
}

}  // namespace detkit::config

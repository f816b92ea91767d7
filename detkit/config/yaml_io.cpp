// Loading Detectron2 YAML files (with _BASE_ chains) into a CfgNode, and dumping one back.
#include <spdlog/spdlog.h>
#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <set>

#include "detkit/config/cfg_node.h"
#include "detkit/config/python_expression.h"
#include "detkit/config/versions.h"
#include "detkit/utils/error.h"
#include "detkit/utils/strings.h"

namespace detkit::config {
namespace fs = std::filesystem;

namespace {

bool is_one_of(const std::string& s, std::initializer_list<const char*> words) {
  for (const char* w : words)
    if (s == w) return true;
  return false;
}

// A plain (unquoted) YAML scalar resolved as PyYAML's safe_load does, except that exponent-only
// floats such as 1e-4 are floats (PyYAML would read a string and Detectron2 would then refuse it).
CfgValue resolve_plain(const std::string& s) {
  if (is_one_of(s, {"", "~", "null", "Null", "NULL"})) return CfgValue();
  if (is_one_of(s, {"true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON"}))
    return CfgValue(true);
  if (is_one_of(s, {"false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF"}))
    return CfgValue(false);
  if (is_one_of(s, {".inf", ".Inf", ".INF", "+.inf"})) return CfgValue(HUGE_VAL);
  if (is_one_of(s, {"-.inf", "-.Inf", "-.INF"})) return CfgValue(-HUGE_VAL);
  CfgValue number = parse_literal(s);
  if (number.kind() == CfgValue::Kind::Int || number.kind() == CfgValue::Kind::Float) return number;
  return CfgValue(s);
}

bool needs_quotes(const std::string& s) {
  if (resolve_plain(s).kind() != CfgValue::Kind::String) return true;
  if (std::string("-?:,[]{}#&*!|>'\"%@` ").find(s.front()) != std::string::npos) return true;
  if (s.back() == ' ' || s.back() == ':') return true;
  return s.find(": ") != std::string::npos || s.find(" #") != std::string::npos ||
         s.find('\n') != std::string::npos;
}

std::string yaml_scalar(const CfgValue& v) {
  switch (v.kind()) {
    case CfgValue::Kind::Null:
      return "null";
    case CfgValue::Kind::Bool:
      return v.as_bool() ? "true" : "false";
    case CfgValue::Kind::Int:
      return std::to_string(v.as_int());
    case CfgValue::Kind::Float:
      return format_float(v.as_float());
    case CfgValue::Kind::String: {
      const std::string& s = v.as_string();
      if (!needs_quotes(s)) return s;
      std::string out = "'";
      for (char c : s) out += c == '\'' ? std::string("''") : std::string(1, c);
      return out + "'";
    }
    case CfgValue::Kind::List:
      return "[]";  // only empty lists are written inline
  }
  return "";
}

// Block list in PyYAML's layout: items at the key's indentation, nested lists as "- - x".
void dump_list(const CfgValue& list, int indent, const std::string& first_prefix,
               std::string& out) {
  const auto& items = list.as_list();
  for (size_t j = 0; j < items.size(); ++j) {
    std::string prefix = (j == 0 ? first_prefix : std::string(indent, ' ')) + "- ";
    const CfgValue& item = items[j];
    if (item.kind() == CfgValue::Kind::List && !item.as_list().empty())
      dump_list(item, indent + 2, prefix, out);
    else
      out += prefix + yaml_scalar(item) + "\n";
  }
}

// Most values one config key may hold, items of nested lists counted. Detectron2's longest lists
// hold a few dozen; YAML aliases can make a short file expand to billions ("billion laughs").
constexpr size_t kMaxValuesPerKey = 10000;
// Longest _BASE_ chain: Detectron2's own configs use one to three files.
constexpr size_t kMaxBaseDepth = 32;
// YAML tags as yaml-cpp reports them: "?" for a plain node, "!" for a quoted scalar, the
// standard "!!name" tags with their long prefix.
const std::string kStandardTagPrefix = "tag:yaml.org,2002:";
const std::string kEvalTag = kStandardTagPrefix + "python/object/apply:eval";
const std::string kTupleTag = kStandardTagPrefix + "python/tuple";

std::string tag_as_written(const std::string& tag) {
  if (tag.rfind(kStandardTagPrefix, 0) == 0) return "!!" + tag.substr(kStandardTagPrefix.size());
  return tag;
}

bool is_standard_tag(const std::string& tag) {
  for (const char* name : {"str", "int", "float", "bool", "null", "seq", "map"})
    if (tag == kStandardTagPrefix + name) return true;
  return false;
}

// Nesting past yaml-cpp's depth guard (500 levels in 0.7) is its DeepRecursion error, named below.

}  // namespace

struct YamlIO {
  CfgNode& root;
  std::vector<std::string> stack;  // canonical paths of the files being loaded, for cycles

  // As yacs does, a string at the top of a value is read again as a Python literal, so
  // `MIN_SIZE_TRAIN: (640, 672)` is a tuple; strings inside lists stay strings.
  CfgValue to_value(const YAML::Node& node, const std::string& key, const std::string& file,
                    size_t& values_left, bool top_level = true) {
    if (values_left-- == 0)
      throw Error("config key '" + key + "' in " + file + " holds more than " +
                  std::to_string(kMaxValuesPerKey) +
                  " values (YAML aliases count once per use); refused");
    const std::string& tag = node.Tag();
    if (tag == kEvalTag) return evaluated(node, key, file, values_left, top_level);
    if (!tag.empty() && tag != "?" && tag != "!" && tag != kTupleTag && !is_standard_tag(tag))
      throw Error("config key '" + key + "' in " + file + ": YAML tag '" + tag_as_written(tag) +
                  "' is not one detkit reads (of Python tags, Detectron2's configs use "
                  "!!python/object/apply:eval; !!python/tuple is read too)");
    switch (node.Type()) {
      case YAML::NodeType::Null:
        return CfgValue();
      case YAML::NodeType::Scalar: {
        CfgValue v = tag == "!" || tag == kStandardTagPrefix + "str" ? CfgValue(node.Scalar())
                                                                     : resolve_plain(node.Scalar());
        if (top_level && v.kind() == CfgValue::Kind::String) v = parse_literal(v.as_string());
        return v;
      }
      case YAML::NodeType::Sequence: {
        std::vector<CfgValue> items;
        for (const auto& item : node)
          items.push_back(to_value(item, key, file, values_left, false));
        return CfgValue::list(std::move(items));
      }
      default:
        throw Error("config key '" + key + "' in " + file +
                    " is a value, but the file gives it a mapping");
    }
  }

  // `!!python/object/apply:eval ["EXPR"]`: Python's eval(EXPR) for Detectron2 (through
  // yaml.unsafe_load); here detkit's restricted evaluator, which runs no Python.
  CfgValue evaluated(const YAML::Node& node, const std::string& key, const std::string& file,
                     size_t& values_left, bool top_level) {
    if (!node.IsSequence() || node.size() != 1 || !node[0].IsScalar())
      throw Error("config key '" + key + "' in " + file +
                  ": !!python/object/apply:eval takes a list of one expression string, as in "
                  "!!python/object/apply:eval [\"[x * 2 for x in [16, 32]]\"]");
    const std::string expression = node[0].Scalar();
    CfgValue v;
    try {
      v = eval_python_expression(expression, values_left + 1);
    } catch (const Error& e) {
      throw Error("config key '" + key + "' in " + file + ": !!python/object/apply:eval \"" +
                  expression + "\": " + e.what());
    }
    values_left -= std::min(values_left, count_values(v) - 1);
    if (top_level && v.kind() == CfgValue::Kind::String) v = parse_literal(v.as_string());
    return v;
  }

  void apply(const YAML::Node& mapping, const std::string& prefix, const std::string& file) {
    for (const auto& entry : mapping) {
      if (!entry.first.IsScalar())  // YAML allows a list or mapping as a key ("? [a, b]")
        throw Error("config file " + file + ", line " +
                    std::to_string(entry.first.Mark().line + 1) + ": a key " +
                    (prefix.empty() ? "" : "under '" + prefix.substr(0, prefix.size() - 1) + "' ") +
                    "is a " + (entry.first.IsSequence() ? "list" : "mapping") +
                    ", not a config key name");
      std::string name = entry.first.Scalar();
      if (prefix.empty() && name == "_BASE_") continue;
      std::string key = prefix + name;
      const YAML::Node& value = entry.second;
      if (root.find_section(key)) {
        if (value.IsNull()) continue;  // "SECTION:" with nothing under it
        if (!value.IsMap())
          throw Error("config key '" + key + "' in " + file +
                      " is a section; expected a mapping of its keys");
        apply(value, key + ".", file);
        continue;
      }
      set_leaf(key, key, value, file);
    }
  }

  // Sets the leaf `key` to a YAML value; `written` is the key as the file names it (an old
  // version's name), for the error on an unknown key.
  void set_leaf(const std::string& key, const std::string& written, const YAML::Node& value,
                const std::string& file) {
    root.set(key, leaf_value(key, written, value, file), file);
  }

  CfgValue leaf_value(const std::string& key, const std::string& written, const YAML::Node& value,
                      const std::string& file) {
    const CfgNode::Leaf* leaf = root.find_leaf(key);
    if (!leaf) root.unknown_key(written, file);
    size_t values_left = kMaxValuesPerKey;
    CfgValue v = to_value(value, key, file, values_left);
    // A plain scalar under a string key is that string (NAME: 123 means "123").
    if (leaf->type == CfgValue::Kind::String && value.IsScalar() && !v.is_null() &&
        v.kind() != CfgValue::Kind::String)
      v = CfgValue(value.Scalar());
    return v;
  }

  // A file of an older config version: every leaf under its old name, set under the latest.
  // The old anchor keys wait in `anchors` until the meta-architecture is known.
  void apply_old(const YAML::Node& mapping, const std::string& prefix, const std::string& file,
                 int version,
                 std::vector<std::pair<std::string, std::pair<YAML::Node, std::string>>>& anchors) {
    for (const auto& entry : mapping) {
      if (!entry.first.IsScalar())
        throw Error("config file " + file + ", line " +
                    std::to_string(entry.first.Mark().line + 1) + ": a key is a " +
                    (entry.first.IsSequence() ? "list" : "mapping") + ", not a config key name");
      const std::string name = entry.first.Scalar();
      if (prefix.empty() && (name == "_BASE_" || name == "VERSION")) continue;
      const std::string written = prefix + name;
      const YAML::Node& value = entry.second;
      if (value.IsMap()) {
        apply_old(value, written + ".", file, version, anchors);
        continue;
      }
      if (version < 2 && is_old_anchor_key(written)) {
        anchors.push_back({written, {value, file}});
        continue;
      }
      const std::string key = upgrade_key(written, version);
      if (value.IsNull() && root.find_section(key)) continue;
      set_leaf(key, written, value, file);
    }
  }

  // The files of a _BASE_ chain, the deepest base first.
  void collect(const std::string& path, const std::string& included_from,
               std::vector<std::pair<YAML::Node, std::string>>& docs) {
    std::string canonical = fs::weakly_canonical(fs::absolute(path)).string();
    if (!fs::is_regular_file(canonical)) {
      if (included_from.empty()) throw Error("config file '" + path + "' does not exist");
      throw Error("_BASE_ file '" + path + "' included from " + included_from + " does not exist");
    }
    if (std::find(stack.begin(), stack.end(), canonical) != stack.end()) {
      std::vector<std::string> chain(std::find(stack.begin(), stack.end(), canonical), stack.end());
      chain.push_back(canonical);
      throw Error("_BASE_ cycle: " + join(chain, " -> "));
    }
    if (stack.size() == kMaxBaseDepth)
      throw Error("_BASE_ chain longer than " + std::to_string(kMaxBaseDepth) + " files: " +
                  stack.front() + " -> ... -> " + stack.back() + " -> " + canonical);
    YAML::Node doc;
    try {
      doc = YAML::LoadFile(canonical);
    } catch (const YAML::DeepRecursion& e) {  // its own message says "bad file"
      throw Error("config file " + path + ": YAML error at line " +
                  std::to_string(e.mark.line + 1) + ", column " +
                  std::to_string(e.mark.column + 1) + ": lists or mappings nested " +
                  std::to_string(e.depth()) + " or more levels deep; refused");
    } catch (const YAML::Exception& e) {
      throw Error("config file " + path + ": YAML error at line " +
                  std::to_string(e.mark.line + 1) + ", column " +
                  std::to_string(e.mark.column + 1) + ": " + e.msg);
    }
    if (doc.IsNull()) return;  // an empty file changes nothing
    if (!doc.IsMap()) throw Error("config file " + path + " must hold a mapping of config keys");
    stack.push_back(canonical);
    const YAML::Node& const_doc = doc;
    if (const YAML::Node base = const_doc["_BASE_"]) {
      if (!base.IsScalar())
        throw Error("_BASE_ in " + path + " must be a file name, got a " +
                    (base.IsSequence() ? "list" : "mapping"));
      std::string base_path = base.Scalar();
      if (base_path.rfind("~", 0) == 0 && std::getenv("HOME"))
        base_path = std::getenv("HOME") + base_path.substr(1);
      if (fs::path(base_path).is_relative())
        base_path = (fs::path(canonical).parent_path() / base_path).string();
      collect(base_path, path, docs);
    }
    docs.push_back({doc, path});
    stack.pop_back();
  }

  // The config version of a chain: the last VERSION its files give, else Detectron2's guess (1
  // where a file names MODEL.WEIGHT or TEST.AUG_ON, keys version 2 renamed; else the latest).
  static int chain_version(const std::vector<std::pair<YAML::Node, std::string>>& docs,
                           const std::string& path) {
    std::optional<int> version;
    for (const auto& [doc, file] : docs) {
      const YAML::Node& const_doc = doc;
      const YAML::Node v = const_doc["VERSION"];
      if (!v) continue;
      int parsed = -1;
      if (!v.IsScalar() || !YAML::convert<int>::decode(v, parsed))
        throw Error("config file " + file + ": VERSION must be an integer, 0 to " +
                    std::to_string(kLatestConfigVersion) + " (Detectron2's config versions)");
      if (parsed < 0 || parsed > kLatestConfigVersion)
        throw Error("config file " + file + " has VERSION " + std::to_string(parsed) +
                    "; detkit reads Detectron2's config versions 0 to " +
                    std::to_string(kLatestConfigVersion));
      version = parsed;
    }
    if (version) return *version;
    for (const auto& [doc, file] : docs) {
      const YAML::Node& const_doc = doc;
      const YAML::Node model = const_doc["MODEL"], test = const_doc["TEST"];
      if ((model && model.IsMap() && model["WEIGHT"]) || (test && test.IsMap() && test["AUG_ON"])) {
        spdlog::warn("Config '{}' has no VERSION and names {}: read as version 1", path,
                     model && model.IsMap() && model["WEIGHT"] ? "MODEL.WEIGHT" : "TEST.AUG_ON");
        return 1;
      }
    }
    return kLatestConfigVersion;
  }

  void load(const std::string& path) {
    std::vector<std::pair<YAML::Node, std::string>> docs;
    collect(path, "", docs);
    const int version = chain_version(docs, path);
    if (version == kLatestConfigVersion) {
      for (const auto& [doc, file] : docs) apply(doc, "", file);
      return;
    }
    std::vector<std::pair<std::string, std::pair<YAML::Node, std::string>>> anchors;
    for (const auto& [doc, file] : docs) apply_old(doc, "", file, version, anchors);
    const std::string meta = root.get_string("MODEL.META_ARCHITECTURE");
    for (const auto& [written, where] : anchors) {
      const std::string key = upgraded_anchor_key(written, meta);
      if (!key.empty()) set_leaf(key, written, where.first, where.second);
    }
  }

  static void dump(const CfgNode& node, int indent, std::string& out) {
    std::set<std::string> names;
    for (const auto& [name, leaf] : node.leaves_) names.insert(name);
    for (const auto& [name, child] : node.sections_) names.insert(name);
    std::string pad(indent, ' ');
    for (const auto& name : names) {
      auto leaf = node.leaves_.find(name);
      if (leaf == node.leaves_.end()) {
        out += pad + name + ":\n";
        dump(*node.sections_.at(name), indent + 2, out);
        continue;
      }
      const CfgValue& v = leaf->second.value;
      if (v.kind() == CfgValue::Kind::List && !v.as_list().empty()) {
        out += pad + name + ":\n";
        dump_list(v, indent, pad, out);
      } else {
        out += pad + name + ": " + yaml_scalar(v) + "\n";
      }
    }
  }
};

void CfgNode::merge_from_file(const std::string& path) {
  if (frozen_) throw Error("cannot merge '" + path + "': the config is frozen");
  CfgNode merged(*this);  // all or nothing: an error leaves this tree as it was
  YamlIO io{merged, {}};
  io.load(path);
  *this = std::move(merged);
}

std::string CfgNode::dump() const {
  std::string out;
  YamlIO::dump(*this, 0, out);
  return out;
}

}  // namespace detkit::config

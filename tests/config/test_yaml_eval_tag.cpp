// Detectron2's `!!python/object/apply:eval` YAML tag read as Detectron2 reads it, against what
// Detectron2 itself made of its configs (../shared/fixtures/detectron2_yaml_eval/values.json):
// the tagged value, the files inheriting it, all 192 keys of retinanet_R_50_FPN_1x.yaml merged,
// and the Panoptic-DeepLab file's tag; then the tags and expressions refused, by file and key.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "detkit/config/defaults.h"
#include "detkit/config/python_expression.h"
#include "tests/support/error_of.h"
#include "tests/support/temp_dir.h"

namespace detkit::config {
namespace {

using detkit::testing::error_of;
using detkit::testing::expect_contains;

const std::string kZooConfigs = std::string(DETKIT_SOURCE_DIR) + "/configs/";
const std::string kFixture =
    std::string(DETKIT_SHARED_DIR) + "/fixtures/detectron2_yaml_eval/values.json";

CfgNode load_config(const std::string& path) {
  CfgNode cfg = get_cfg();
  cfg.merge_from_file(path);
  return cfg;
}

// Detectron2's value (JSON) and detkit's, equal as numbers (a config key typed float holds
// Detectron2's int 32 as 32.0; `strict_types` asks for int/float as Python had them).
bool equal_to_detectron2(const CfgValue& got, const nlohmann::json& want, bool strict_types) {
  if (want.is_array()) {
    if (got.kind() != CfgValue::Kind::List || got.as_list().size() != want.size()) return false;
    for (size_t i = 0; i < want.size(); ++i)
      if (!equal_to_detectron2(got.as_list()[i], want[i], strict_types)) return false;
    return true;
  }
  if (want.is_null()) return got.is_null();
  if (want.is_boolean())
    return got.kind() == CfgValue::Kind::Bool && got.as_bool() == want.get<bool>();
  if (want.is_string())
    return got.kind() == CfgValue::Kind::String && got.as_string() == want.get<std::string>();
  if (want.is_number_integer()) {
    if (got.kind() == CfgValue::Kind::Int) return got.as_int() == want.get<int64_t>();
    return !strict_types && got.kind() == CfgValue::Kind::Float &&
           got.as_float() == static_cast<double>(want.get<int64_t>());
  }
  if (got.kind() != CfgValue::Kind::Float && (strict_types || got.kind() != CfgValue::Kind::Int))
    return false;
  return got.as_float() == want.get<double>();  // the very bits: both are shortest round-trip text
}

nlohmann::json eval_fixture() { return nlohmann::json::parse(std::ifstream(kFixture)); }

}  // namespace

TEST(YamlEvalTag, BaseRetinaNetHoldsDetectron2sTaggedLineAndItsValue) {
  if (!std::filesystem::exists(kFixture)) GTEST_SKIP() << "shared fixture absent: " << kFixture;
  const nlohmann::json tagged = eval_fixture()["tagged_files"]["Base-RetinaNet.yaml"]["keys"];
  ASSERT_EQ(tagged.size(), 1u);
  const std::string key = tagged.begin().key();
  const nlohmann::json entry = tagged.begin().value();
  EXPECT_EQ(key, "MODEL.ANCHOR_GENERATOR.SIZES");
  // detkit's Base-RetinaNet.yaml carries Detectron2's tagged line as written.
  std::ifstream file(kZooConfigs + "Base-RetinaNet.yaml");
  std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  expect_contains(text, "SIZES: " + entry["yaml_source"].get<std::string>());
  // The expression's own value keeps Python's types: [[int, float, float], ...].
  const std::string source = entry["yaml_source"].get<std::string>();
  const std::string expression =
      nlohmann::json::parse(source.substr(source.find('['))).at(0).get<std::string>();
  const CfgValue evaluated = eval_python_expression(expression, 10000);
  EXPECT_TRUE(equal_to_detectron2(evaluated, entry["value"], /*strict_types=*/true))
      << evaluated.repr() << " vs " << entry["value"].dump();
  EXPECT_EQ(entry["python_types"].get<std::string>().substr(0, 30),
            "list(list(int, float, float), ");
  // Merged into the config, the key is float-typed: the same numbers.
  const CfgValue merged = load_config(kZooConfigs + "Base-RetinaNet.yaml").get(key);
  EXPECT_TRUE(equal_to_detectron2(merged, entry["value"], /*strict_types=*/false)) << merged.repr();
}

TEST(YamlEvalTag, FilesInheritingTheTagGetDetectron2sValue) {
  if (!std::filesystem::exists(kFixture)) GTEST_SKIP() << "shared fixture absent: " << kFixture;
  int checked = 0;
  const nlohmann::json inheriting = eval_fixture()["files_inheriting_a_tagged_value"];
  for (const auto& [file, entry] : inheriting.items()) {
    if (!std::filesystem::exists(kZooConfigs + file)) {
      std::cout << "not in detkit's configs/ (not compared): " << file << "\n";
      continue;
    }
    const CfgNode cfg = load_config(kZooConfigs + file);
    for (const auto& [key, value] : entry["values"].items())
      EXPECT_TRUE(equal_to_detectron2(cfg.get(key), value, false))
          << file << " " << key << ": " << cfg.get(key).repr();
    ++checked;
  }
  std::cout << checked << " of Detectron2's files inheriting the tag compared\n";
  EXPECT_GE(checked, 2);
}

TEST(YamlEvalTag, RetinaNetR50FPN1xMergesToDetectron2sEveryKey) {
  if (!std::filesystem::exists(kFixture)) GTEST_SKIP() << "shared fixture absent: " << kFixture;
  const nlohmann::json merged =
      eval_fixture()["merged_config"]["COCO-Detection/retinanet_R_50_FPN_1x.yaml"]["values"];
  const CfgNode cfg = load_config(kZooConfigs + "COCO-Detection/retinanet_R_50_FPN_1x.yaml");
  int compared = 0;
  for (const auto& [key, value] : merged.items()) {
    // Detectron2's default device is cuda; detkit's is the machine's (cpu without a GPU).
    if (key == "MODEL.DEVICE") continue;
    ASSERT_TRUE(cfg.has(key)) << "detkit has no key " << key;
    EXPECT_TRUE(equal_to_detectron2(cfg.get(key), value, false))
        << key << ": detkit " << cfg.get(key).repr() << ", Detectron2 " << value.dump();
    ++compared;
  }
  std::cout << compared << " of " << merged.size() << " keys compared (MODEL.DEVICE excepted)\n";
  EXPECT_EQ(compared + 1, static_cast<int>(merged.size()));
}

TEST(YamlEvalTag, PanopticDeepLabsTagGivesDetectron2sMinSizes) {
  if (!std::filesystem::exists(kFixture)) GTEST_SKIP() << "shared fixture absent: " << kFixture;
  const nlohmann::json outside = eval_fixture()["outside_configs_dir"];
  for (const auto& [file, entry] : outside.items()) {
    const nlohmann::json keys = entry["keys"];
    ASSERT_EQ(keys.size(), 1u) << file;
    const std::string key = keys.begin().key();
    const nlohmann::json tagged = keys.begin().value();
    ASSERT_EQ(key, "INPUT.MIN_SIZE_TRAIN") << file;
    detkit::testing::TempDir dir("yaml_eval_deeplab");
    const std::string path =
        dir.write("deeplab.yaml",
                  "INPUT:\n  MIN_SIZE_TRAIN: " + tagged["yaml_source"].get<std::string>() + "\n");
    const CfgValue value = load_config(path).get(key);
    EXPECT_TRUE(equal_to_detectron2(value, tagged["value"], true)) << value.repr();
  }
}

TEST(YamlEvalTag, RefusesOtherTagsAndExpressionsNamingFileAndKey) {
  detkit::testing::TempDir dir("yaml_eval_refused");
  auto refused = [&](const std::string& yaml) {
    const std::string path = dir.write("bad.yaml", yaml);
    CfgNode cfg = get_cfg();
    const CfgNode before = cfg;
    const std::string message = error_of([&] { cfg.merge_from_file(path); });
    EXPECT_TRUE(cfg == before) << "a refused file changed the config";
    expect_contains(message, path);
    return message;
  };
  const std::string os = refused(
      "MODEL:\n  ANCHOR_GENERATOR:\n    SIZES: !!python/object/apply:eval "
      "[\"__import__('os').system('touch pwned')\"]\n");
  expect_contains(os, "config key 'MODEL.ANCHOR_GENERATOR.SIZES'");
  expect_contains(
      os, "!!python/object/apply:eval \"__import__('os').system('touch pwned')\": at column 17");
  EXPECT_FALSE(std::filesystem::exists("pwned"));
  expect_contains(refused("SOLVER:\n  STEPS: !!python/object/apply:os.system [\"ls\"]\n"),
                  "config key 'SOLVER.STEPS' in " + dir.path("bad.yaml") +
                      ": YAML tag '!!python/object/apply:os.system' is not one detkit reads");
  expect_contains(refused("SOLVER:\n  STEPS: !!python/name:os.system\n"),
                  "YAML tag '!!python/name:os.system'");
  expect_contains(refused("SOLVER:\n  STEPS: !custom [1]\n"), "YAML tag '!custom'");
  expect_contains(refused("SOLVER:\n  STEPS: !!python/object/apply:eval {args: ['(1,)']}\n"),
                  "takes a list of one expression string");
  expect_contains(refused("SOLVER:\n  STEPS: !!python/object/apply:eval ['(1,)', {}]\n"),
                  "takes a list of one expression string");
  // The value is then checked as any other: a tuple of ints for STEPS.
  expect_contains(refused("SOLVER:\n  STEPS: !!python/object/apply:eval ['[0.5]']\n"),
                  "config key 'SOLVER.STEPS'");
  expect_contains(refused("SOLVER:\n  BASE_LR: !!python/object/apply:eval ['1 / 0']\n"),
                  "\"1 / 0\": at column 3: ZeroDivisionError");
}

TEST(YamlEvalTag, AcceptsTagsInsideListsAndPythonTuples) {
  detkit::testing::TempDir dir("yaml_eval_nested");
  const CfgNode cfg = load_config(dir.write(
      "nested.yaml",
      "SOLVER:\n  STEPS: !!python/tuple [1000, !!python/object/apply:eval ['2 * 1000']]\n"
      "  BASE_LR: !!python/object/apply:eval ['0.02 / 8']\n"
      "INPUT:\n  MIN_SIZE_TRAIN: !!python/object/apply:eval ['tuple(range(640, 801, 32))']\n"
      "DATASETS:\n  TRAIN: !!python/object/apply:eval ['(\"coco_2017_\" + \"train\",)']\n"));
  EXPECT_EQ(cfg.get_int_list("SOLVER.STEPS"), (std::vector<int64_t>{1000, 2000}));
  EXPECT_EQ(cfg.get_float("SOLVER.BASE_LR"), 0.02 / 8);
  EXPECT_EQ(cfg.get_int_list("INPUT.MIN_SIZE_TRAIN"),
            (std::vector<int64_t>{640, 672, 704, 736, 768, 800}));
  EXPECT_EQ(cfg.get_string_list("DATASETS.TRAIN"), (std::vector<std::string>{"coco_2017_train"}));
}

}  // namespace detkit::config

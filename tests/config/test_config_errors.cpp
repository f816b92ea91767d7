// Every bad config is an error that names the key (with a close match) and the file.
#include <gtest/gtest.h>

#include "detkit/config/defaults.h"
#include "detkit/utils/error.h"
#include "tests/support/temp_dir.h"

namespace detkit::config {
namespace {

// Runs `f`, expects a detkit::Error, and checks its message holds every fragment.
template <typename F>
void expect_error(F f, std::initializer_list<std::string> fragments) {
  try {
    f();
    ADD_FAILURE() << "expected a detkit::Error";
  } catch (const Error& e) {
    std::string message = e.what();
    for (const auto& fragment : fragments)
      EXPECT_NE(message.find(fragment), std::string::npos)
          << "message '" << message << "' lacks '" << fragment << "'";
  }
}

}  // namespace

TEST(ConfigErrors, UnknownKeyInFileNamesKeyFileAndCloseMatch) {
  testing::TempDir tmp("cfg_unknown");
  auto path = tmp.write("bad.yaml", "MODEL:\n  RPN:\n    POST_NMS_TOPK_TRAINN: 10\n");
  CfgNode cfg = get_cfg();
  expect_error(
      [&] { cfg.merge_from_file(path); },
      {"MODEL.RPN.POST_NMS_TOPK_TRAINN", path, "did you mean 'MODEL.RPN.POST_NMS_TOPK_TRAIN'"});
  EXPECT_EQ(cfg, get_cfg());  // nothing applied
}

TEST(ConfigErrors, UnknownKeyOnCommandLine) {
  CfgNode cfg = get_cfg();
  expect_error(
      [&] {
        cfg.merge_from_list({"SOLVER.BASE_LRR", "0.1"});
      },
      {"SOLVER.BASE_LRR", "command-line", "SOLVER.BASE_LR'"});
  expect_error([&] { cfg.merge_from_list({"TOTALLY.DIFFERENT", "1"}); }, {"TOTALLY.DIFFERENT"});
}

TEST(ConfigErrors, TypeThatDoesNotFit) {
  testing::TempDir tmp("cfg_type");
  auto path = tmp.write("bad.yaml", "SOLVER:\n  MAX_ITER: 0.5\n");
  CfgNode cfg = get_cfg();
  expect_error([&] { cfg.merge_from_file(path); },
               {"SOLVER.MAX_ITER", path, "expected a int", "0.5"});
  expect_error(
      [&] {
        cfg.merge_from_list({"SOLVER.BASE_LR", "fast"});
      },
      {"SOLVER.BASE_LR", "expected a float", "'fast'"});
  expect_error(
      [&] {
        cfg.merge_from_list({"INPUT.MIN_SIZE_TRAIN", "800"});
      },
      {"INPUT.MIN_SIZE_TRAIN", "expected a list"});
  expect_error(
      [&] {
        cfg.merge_from_list({"INPUT.MIN_SIZE_TRAIN", "('a', 'b')"});
      },
      {"INPUT.MIN_SIZE_TRAIN", "list of int"});
  expect_error([&] { cfg.merge_from_list({"MODEL.MASK_ON", "1"}); }, {"MODEL.MASK_ON", "bool"});
  expect_error(
      [&] {
        cfg.merge_from_list({"SOLVER.MAX_ITER", "None"});
      },
      {"SOLVER.MAX_ITER", "None is not allowed"});
  auto section = tmp.write("section.yaml", "MODEL: 3\n");
  expect_error([&] { cfg.merge_from_file(section); }, {"'MODEL'", "is a section", section});
  auto mapping = tmp.write("mapping.yaml", "SOLVER:\n  BASE_LR:\n    X: 1\n");
  expect_error([&] { cfg.merge_from_file(mapping); }, {"SOLVER.BASE_LR", "mapping", mapping});
  EXPECT_EQ(cfg, get_cfg());
}

TEST(ConfigErrors, MissingBaseNamesBothFiles) {
  testing::TempDir tmp("cfg_base");
  auto path = tmp.write("child.yaml", "_BASE_: \"missing/parent.yaml\"\nSEED: 3\n");
  CfgNode cfg = get_cfg();
  expect_error([&] { cfg.merge_from_file(path); }, {"missing/parent.yaml", path, "does not exist"});
  expect_error([&] { cfg.merge_from_file(tmp.path("nope.yaml")); },
               {"nope.yaml", "does not exist"});
}

TEST(ConfigErrors, BaseCycleIsNamed) {
  testing::TempDir tmp("cfg_cycle");
  tmp.write("a.yaml", "_BASE_: b.yaml\n");
  tmp.write("b.yaml", "_BASE_: sub/../a.yaml\n");
  CfgNode cfg = get_cfg();
  expect_error([&] { cfg.merge_from_file(tmp.path("a.yaml")); },
               {"_BASE_ cycle", "a.yaml -> ", "b.yaml"});
  tmp.write("self.yaml", "_BASE_: self.yaml\n");
  expect_error([&] { cfg.merge_from_file(tmp.path("self.yaml")); }, {"_BASE_ cycle"});
}

// Found by fuzz/yaml_config_fuzzer: YAML's complex keys ("? [a, b]") used to escape as
// yaml-cpp's bad-conversion exception.
TEST(ConfigErrors, AKeyThatIsAListOrMappingIsNamed) {
  testing::TempDir tmp("config_complex_key");
  const std::string file = tmp.write("k.yaml", "MODEL:\n  ? [WEIGHTS, x]\n  : 1\n");
  CfgNode cfg = get_cfg();
  expect_error([&] { cfg.merge_from_file(file); },
               {"config file " + file +
                ", line 2: a key under 'MODEL' is a list, not a config "
                "key name"});
}

TEST(ConfigErrors, BaseIsRelativeToTheIncludingFile) {
  testing::TempDir tmp("cfg_relative");
  tmp.write("root.yaml", "SOLVER:\n  BASE_LR: 0.5\n  MAX_ITER: 7\n");
  auto child = tmp.write("sub/child.yaml", "_BASE_: ../root.yaml\nSOLVER:\n  MAX_ITER: 9\n");
  CfgNode cfg = get_cfg();
  cfg.merge_from_file(child);
  EXPECT_EQ(cfg.get_float("SOLVER.BASE_LR"), 0.5);
  EXPECT_EQ(cfg.get_int("SOLVER.MAX_ITER"), 9);
}

TEST(ConfigErrors, YamlSyntaxErrorNamesFileAndLine) {
  testing::TempDir tmp("cfg_syntax");
  auto path = tmp.write("broken.yaml", "SOLVER:\n  BASE_LR: [0.1\n  MAX_ITER: 3\n");
  CfgNode cfg = get_cfg();
  expect_error([&] { cfg.merge_from_file(path); }, {path, "YAML error at line"});
  auto list = tmp.write("list.yaml", "- 1\n- 2\n");
  expect_error([&] { cfg.merge_from_file(list); }, {list, "mapping"});
}

TEST(ConfigErrors, OddOverrideList) {
  CfgNode cfg = get_cfg();
  expect_error(
      [&] {
        cfg.merge_from_list({"SOLVER.BASE_LR", "0.1", "SOLVER.MAX_ITER"});
      },
      {"KEY VALUE", "SOLVER.MAX_ITER"});
  EXPECT_EQ(cfg.get_float("SOLVER.BASE_LR"), 0.001);  // all or nothing
}

}  // namespace detkit::config

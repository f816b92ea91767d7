// Every bad config is an error that names the key (with a close match) and the file.
#include <gtest/gtest.h>

#include <iostream>

#include "detkit/config/defaults.h"
#include "detkit/utils/error.h"
#include "tests/support/error_of.h"
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

// Resource bounds: a short file whose aliases expand to 10^9 values ("billion laughs"), nesting
// past yaml-cpp's depth guard, and a _BASE_ chain of 40 files are each refused with a named error.
TEST(ConfigErrors, AliasesExpandingPastTheValueLimitAreRefused) {
  testing::TempDir tmp("cfg_laughs");
  std::string list = "&l0 [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]";
  for (int level = 1; level <= 9; ++level) {
    const std::string prev = "*l" + std::to_string(level - 1);
    list = "&l" + std::to_string(level) + " [" + list;
    for (int copy = 1; copy < 10; ++copy) list += ", " + prev;
    list += "]";
  }
  const std::string file = tmp.write("laughs.yaml", "MODEL:\n  PIXEL_STD: " + list + "\n");
  CfgNode cfg = get_cfg();
  expect_error([&] { cfg.merge_from_file(file); },
               {"config key 'MODEL.PIXEL_STD' in " + file +
                " holds more than 10000 values (YAML aliases count once per use); refused"});
  EXPECT_EQ(cfg, get_cfg());
}

TEST(ConfigErrors, NestingPastTheParsersDepthGuardIsAYamlErrorOfTheFile) {
  testing::TempDir tmp("cfg_deep");
  const std::string file = tmp.write(
      "deep.yaml", "MODEL:\n  PIXEL_STD: " + std::string(100000, '[') + std::string(100000, ']'));
  CfgNode cfg = get_cfg();
  const std::string message = testing::error_of([&] { cfg.merge_from_file(file); });
  std::cout << "[ message ] " << message << "\n";
  EXPECT_EQ(message.rfind("config file " + file + ": YAML error at line 2", 0), 0u) << message;
  EXPECT_NE(message.find(": lists or mappings nested "), std::string::npos) << message;
  EXPECT_NE(message.find(" or more levels deep; refused"), std::string::npos) << message;
}

TEST(ConfigErrors, BaseChainsLongerThan32FilesAreRefused) {
  testing::TempDir tmp("cfg_long_chain");
  for (int i = 0; i < 40; ++i)
    tmp.write("f" + std::to_string(i) + ".yaml",
              i + 1 < 40 ? "_BASE_: f" + std::to_string(i + 1) + ".yaml\n" : "SEED: 1\n");
  CfgNode cfg = get_cfg();
  expect_error([&] { cfg.merge_from_file(tmp.path("f0.yaml")); },
               {"_BASE_ chain longer than 32 files: ", "f0.yaml -> ... -> ", "f31.yaml -> ",
                "f32.yaml"});
  // 32 files are fine.
  EXPECT_NO_THROW(cfg.merge_from_file(tmp.path("f8.yaml")));
  EXPECT_EQ(cfg.get_int("SEED"), 1);
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

// What the reader refuses, and how: malicious pickles (nothing runs), corrupt or truncated
// archives, compressed entries, legacy torch.save files and Detectron2 .pkl files.
#include <gtest/gtest.h>

#include <filesystem>

#include "detkit/checkpoint/torch_file.h"
#include "detkit/utils/error.h"
#include "tests/checkpoint/checkpoint_oracle.h"
#include "tests/support/error_of.h"

namespace detkit::checkpoint {
namespace {

using detkit::testing::expect_contains;

using testing::PythonFixtures;

// The message load_torch_file(path) throws; fails the test when it does not throw.
std::string load_error(const std::string& path) {
  try {
    load_torch_file(path);
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << path << " loaded";
  return "";
}

TEST(TorchFileRefuse, MaliciousGlobalsAreRefusedByNameAndNeverRun) {
  DETKIT_REQUIRE_PYTHON_FIXTURES();
  const auto& fixtures = PythonFixtures::get();
  const std::string evil = fixtures.file("evil.pth");
  const std::string message = load_error(evil);
  expect_contains(message, "refusing to load 'posix.system' from " + evil +
                               ": only tensors, numpy arrays, dicts, lists, tuples, numbers, "
                               "strings and bytes are allowed");
  EXPECT_FALSE(std::filesystem::exists(fixtures.marker()));
  expect_contains(load_error(fixtures.file("evil_os.pth")), "refusing to load 'os.system'");
  expect_contains(load_error(fixtures.file("evil_stack_global.pth")),
                  "refusing to load 'builtins.eval'");
  expect_contains(load_error(fixtures.file("evil_inst.pth")),
                  "refusing to load 'subprocess.Popen'");
  // The file is really malicious: Python's unrestricted torch.load runs it.
  testing::TempDir scratch("evil_proof");
  ASSERT_EQ(testing::run_checkpoint_oracle({"unsafe_load", evil}, scratch), "");
  EXPECT_TRUE(std::filesystem::exists(fixtures.marker()));
  std::filesystem::remove(fixtures.marker());
}

TEST(TorchFileRefuse, TruncatedOrCorruptArchivesNameTheFile) {
  DETKIT_REQUIRE_PYTHON_FIXTURES();
  const std::string bytes = read_file(PythonFixtures::get().file("nested.pth"));
  testing::TempDir tmp("corrupt");
  for (size_t keep : {bytes.size() / 2, bytes.size() - 30, size_t{10}, size_t{0}}) {
    const std::string path = tmp.write("truncated.pth", bytes.substr(0, keep));
    const std::string message = load_error(path);
    expect_contains(message, "cannot read '" + path + "'");
  }
  expect_contains(load_error(tmp.write("cut.pth", bytes.substr(0, bytes.size() / 2))),
                  "truncated or corrupt zip archive");
  // One flipped byte inside data.pkl: the CRC catches it.
  std::string flipped = bytes;
  const size_t at = bytes.find("momentum_buffer");
  ASSERT_NE(at, std::string::npos);
  flipped[at] ^= 0x20;
  expect_contains(load_error(tmp.write("flipped.pth", flipped)), "CRC mismatch");
  expect_contains(load_error(tmp.write("junk.pth", "not a checkpoint")),
                  "not a PyTorch checkpoint");
}

TEST(TorchFileRefuse, FormatsThatAreNotTorchSaveZipsSayWhatToDo) {
  DETKIT_REQUIRE_PYTHON_FIXTURES();
  const auto& fixtures = PythonFixtures::get();
  expect_contains(load_error(fixtures.file("deflated.pth")), "is compressed (method 8)");
  expect_contains(load_error(fixtures.file("legacy.pth")), "legacy torch.save format");
  const std::string pkl = load_error(fixtures.file("model_zoo.pkl"));
  expect_contains(pkl,
                  "it is a pickle (.pkl) file (Detectron2 model zoo, Caffe2 weights); read it "
                  "with read_weights_file, as MODEL.WEIGHTS does");
  expect_contains(load_error(fixtures.file("missing.pth")), "cannot open");
}

}  // namespace
}  // namespace detkit::checkpoint

#pragma once
// Python's torch (Debian python3-torch) as the oracle for checkpoint files: runs
// tests/parity/oracle_checkpoint.py, and compares value trees.
#include <ATen/ATen.h>
#include <ATen/core/ivalue.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "detkit/utils/file_io.h"
#include "tests/support/temp_dir.h"

namespace detkit::testing {

inline bool have_python_torch() { return !std::string(DETKIT_ORACLE_PYTHON).empty(); }

/// Runs `python3 oracle_checkpoint.py args...`; returns "" on success, else the command and its
/// stderr.
inline std::string run_checkpoint_oracle(const std::vector<std::string>& args,
                                         const TempDir& scratch) {
  std::string command = std::string("'") + DETKIT_ORACLE_PYTHON + "' '" + DETKIT_SOURCE_DIR +
                        "/tests/parity/oracle_checkpoint.py'";
  for (const std::string& arg : args) command += " '" + arg + "'";
  const std::string err = scratch.path("oracle_stderr.txt");
  if (std::system((command + " 2> '" + err + "'").c_str()) == 0) return "";
  return command + " failed:\n" + read_file(err);
}

/// The files `oracle_checkpoint.py make` writes, made once per test binary.
class PythonFixtures {
 public:
  static const PythonFixtures& get() {
    static const std::unique_ptr<PythonFixtures> fixtures(new PythonFixtures());
    return *fixtures;
  }
  std::string file(const std::string& name) const { return dir_.path(name); }
  /// The file the malicious pickle would create if it ran.
  std::string marker() const { return dir_.path("evil_ran"); }
  const std::string& error() const { return error_; }

 private:
  PythonFixtures() : dir_("python_checkpoints") {
    error_ = run_checkpoint_oracle({"make", dir_.path(), marker()}, dir_);
  }
  TempDir dir_;
  std::string error_;
};

/// Expects `a` and `b` to be the same tree: same types, dict keys in the same order, tensors
/// with the same dtype, sizes and values.
inline void expect_same_tree(const c10::IValue& a, const c10::IValue& b,
                             const std::string& where = "root") {
  ASSERT_EQ(a.tagKind(), b.tagKind()) << where;
  if (a.isTensor()) {
    const at::Tensor &x = a.toTensor(), &y = b.toTensor();
    ASSERT_EQ(x.scalar_type(), y.scalar_type()) << where;
    ASSERT_EQ(x.sizes(), y.sizes()) << where;
    EXPECT_TRUE(x.equal(y)) << where;
  } else if (a.isGenericDict()) {
    const auto x = a.toGenericDict(), y = b.toGenericDict();
    ASSERT_EQ(x.size(), y.size()) << where;
    for (auto i = x.begin(), j = y.begin(); i != x.end(); ++i, ++j) {
      expect_same_tree(i->key(), j->key(), where + " key");
      expect_same_tree(i->value(), j->value(), where + "[" + i->key().tagKind() + "]");
    }
  } else if (a.isList() || a.isTuple()) {
    const std::vector<c10::IValue> x =
        a.isList() ? a.toList().vec() : a.toTupleRef().elements().vec();
    const std::vector<c10::IValue> y =
        b.isList() ? b.toList().vec() : b.toTupleRef().elements().vec();
    ASSERT_EQ(x.size(), y.size()) << where;
    for (size_t i = 0; i < x.size(); ++i)
      expect_same_tree(x[i], y[i], where + "[" + std::to_string(i) + "]");
  } else {
    EXPECT_EQ(a, b) << where;
  }
}

}  // namespace detkit::testing

#define DETKIT_REQUIRE_PYTHON_FIXTURES()                                            \
  if (!::detkit::testing::have_python_torch())                                      \
    GTEST_SKIP() << "python3-torch not found: apt-get install python3-torchvision"; \
  ASSERT_EQ(::detkit::testing::PythonFixtures::get().error(), "")

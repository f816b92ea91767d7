#pragma once
// Parity oracle for tests: runs a Python script of tests/parity/ under the python3 that imports
// torchvision (found at configure time) on tensors saved from C++, and reads back its tensors.
#include <ATen/core/Tensor.h>

#include <map>
#include <string>

namespace detkit::testing {

using TensorMap = std::map<std::string, at::Tensor>;

/// The python3 that imports torchvision, or "" when configure found none.
std::string oracle_python();

/// Saves `inputs` (torch::pickle_save, a dict Python's torch.load reads) to a temporary in.pt, runs
/// `<oracle python> tests/parity/<script> in.pt out.pt <mode>` and returns the dict of tensors the
/// script wrote to out.pt with torch.save (at least two entries: libtorch cannot unpickle a
/// one-entry dict, so scripts pad it). Throws std::runtime_error carrying the script's stderr
/// when it fails. oracle_ops.py runs several cases per call: see its docstring ("name#k" keys).
TensorMap run_oracle(const std::string& script, const std::string& mode, const TensorMap& inputs);

}  // namespace detkit::testing

/// In a GoogleTest body: skips the test when no python3 with torchvision was found.
#define DETKIT_REQUIRE_ORACLE()                   \
  if (::detkit::testing::oracle_python().empty()) \
  GTEST_SKIP() << "python3-torchvision not found: apt-get install python3-torchvision"

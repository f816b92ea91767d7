#pragma once
// The .pkl files tests/parity/oracle_numpy_pickle.py makes with Debian's python3-numpy (read
// back there as Detectron2 reads them), made once per test binary.
#include <memory>
#include <string>

#include "tests/checkpoint/checkpoint_oracle.h"
#include "tests/support/detectron2_fixture.h"

namespace detkit::testing {

class NumpyPickleFixtures {
 public:
  static const NumpyPickleFixtures& get() {
    static const std::unique_ptr<NumpyPickleFixtures> fixtures(new NumpyPickleFixtures());
    return *fixtures;
  }
  std::string file(const std::string& name) const { return dir_.path(name); }
  std::string marker() const { return dir_.path("evil_ran"); }
  const std::string& error() const { return error_; }
  /// The files made from the Detectron2 fixture's weights (zoo_p*.pkl, detectron1.pkl) exist.
  bool have_detectron2() const { return have_detectron2_; }

 private:
  NumpyPickleFixtures() : dir_("numpy_pickles") {
    Detectron2Fixture fx;
    have_detectron2_ = fx.present();
    std::string command = std::string("'") + DETKIT_ORACLE_PYTHON + "' '" + DETKIT_SOURCE_DIR +
                          "/tests/parity/oracle_numpy_pickle.py' make '" + dir_.path() + "' '" +
                          marker() + "'";
    if (have_detectron2_) command += " '" + fx.dir + "weights.pth'";
    const std::string err = dir_.path("oracle_stderr.txt");
    if (std::system((command + " 2> '" + err + "'").c_str()) != 0)
      error_ = command + " failed:\n" + read_file(err);
  }
  TempDir dir_;
  std::string error_;
  bool have_detectron2_ = false;
};

}  // namespace detkit::testing

#define DETKIT_REQUIRE_NUMPY_PICKLES()                                                           \
  if (!::detkit::testing::have_python_torch())                                                   \
    GTEST_SKIP() << "python3-torch (with numpy) not found: apt-get install python3-torchvision"; \
  ASSERT_EQ(::detkit::testing::NumpyPickleFixtures::get().error(), "")

// The restricted unpickler on numpy .pkl files made by Debian's python3-numpy: every dtype, byte
// order and memory order equal to torch's reading of the same arrays (diff 0) in protocols 2, 4
// and 5 and as Python 2 writes them; malicious, malformed and unsupported files refused by name.
#include <gtest/gtest.h>

#include <filesystem>
#include <iostream>

#include "detkit/checkpoint/state_dict.h"
#include "detkit/checkpoint/weights_file.h"
#include "detkit/utils/error.h"
#include "detkit/utils/file_io.h"
#include "tests/checkpoint/numpy_pickle_oracle.h"
#include "tests/support/error_of.h"

namespace detkit::checkpoint {
namespace {

using detkit::testing::expect_contains;

using testing::NumpyPickleFixtures;

c10::impl::GenericDict read_pickle(const std::string& path) {
  const c10::IValue value = load_pickle_bytes(read_file(path), path);
  EXPECT_TRUE(value.isGenericDict()) << path;
  return value.toGenericDict();
}

std::string read_error(const std::string& path) {
  try {
    read_weights_file(path);
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << path << " was read";
  return "";
}

TEST(NumpyPickle, ArraysEqualTorchsInEveryProtocolAndInPython2Files) {
  DETKIT_REQUIRE_NUMPY_PICKLES();
  const auto& fixtures = NumpyPickleFixtures::get();
  // arrays.pth: torch.save of the same values as tensors (torch.from_numpy).
  const TensorDict want = [&] {
    TensorDict out;
    const c10::IValue all = read_weights_file(fixtures.file("arrays.pth")).content;
    for (const auto& entry : all.toGenericDict())
      if (entry.value().isTensor()) out[entry.key().toStringRef()] = entry.value().toTensor();
    return out;
  }();
  ASSERT_EQ(want.size(), 17u);
  for (const char* name : {"arrays_p2", "arrays_p4", "arrays_p5", "arrays_py2"}) {
    const c10::impl::GenericDict got = read_pickle(fixtures.file(std::string(name) + ".pkl"));
    ASSERT_EQ(got.size(), want.size() + 1) << name;
    double max_diff = 0;
    for (const auto& [key, tensor] : want) {
      const c10::IValue value = got.at(c10::IValue(key));
      ASSERT_TRUE(value.isTensor()) << name << " " << key;
      const at::Tensor& t = value.toTensor();
      EXPECT_EQ(t.scalar_type(), tensor.scalar_type()) << name << " " << key;
      ASSERT_EQ(t.sizes(), tensor.sizes()) << name << " " << key;
      EXPECT_TRUE(t.is_contiguous()) << name << " " << key;
      EXPECT_TRUE(t.equal(tensor)) << name << " " << key;
      if (t.numel() > 0 && t.is_floating_point())
        max_diff = std::max(
            max_diff, (t.to(at::kDouble) - tensor.to(at::kDouble)).abs().max().item<double>());
    }
    EXPECT_EQ(got.at(c10::IValue("latin1_bytes")).toStringRef(),
              "\u00fa\u00fb\u00fc\u00fd\u00fe\u00ff")
        << name;
    std::cout << "[ numpy pickle ] " << name << ": " << want.size() << " arrays, max diff vs torch "
              << max_diff << "\n";
    EXPECT_EQ(max_diff, 0.0);
  }
}

TEST(NumpyPickle, MaliciousPicklesAreRefusedByNameAndNeverRun) {
  DETKIT_REQUIRE_NUMPY_PICKLES();
  const auto& fixtures = NumpyPickleFixtures::get();
  for (const char* name : {"evil_system_p2.pkl", "evil_system_p4.pkl"}) {
    const std::string path = fixtures.file(name);
    expect_contains(read_error(path), "refusing to load 'posix.system' from " + path);
  }
  expect_contains(read_error(fixtures.file("evil_nested.pkl")), "refusing to load 'numpy.array'");
  expect_contains(read_error(fixtures.file("evil_matrix.pkl")), "refusing to load 'numpy.matrix'");
  expect_contains(read_error(fixtures.file("persistent_id.pkl")),
                  "refers to a torch storage ('0') outside it");
  EXPECT_FALSE(std::filesystem::exists(fixtures.marker()));
}

TEST(NumpyPickle, MalformedAndUnsupportedFilesAreNamedErrors) {
  DETKIT_REQUIRE_NUMPY_PICKLES();
  const auto& fixtures = NumpyPickleFixtures::get();
  auto error_of = [&](const char* name) {
    const std::string path = fixtures.file(name);
    const std::string message = read_error(path);
    expect_contains(message, path);
    return message;
  };
  expect_contains(
      error_of("short_buffer.pkl"),
      "a numpy array of shape [4] and dtype 'f4' needs 4 x 4 bytes, the pickle holds 12");
  expect_contains(error_of("absurd_shape.pkl"), "a numpy array whose shape overflows");
  expect_contains(error_of("out_of_band.pkl"), "out-of-band buffers");
  expect_contains(error_of("truncated.pkl"), "truncated pickle");
  expect_contains(error_of("protocol0.pkl"),
                  "neither a torch.save archive (.pth) nor a pickle of protocol 2 to 5 (.pkl)");
  expect_contains(error_of("object_array.pkl"), "numpy dtype 'O8' has no torch equivalent");
  expect_contains(error_of("uint32.pkl"), "numpy dtype 'u4' has no torch equivalent");
  expect_contains(error_of("structured.pkl"), "numpy dtype 'V8' has no torch equivalent");
}

}  // namespace
}  // namespace detkit::checkpoint

namespace detkit::checkpoint {
namespace {

std::string refusal(const std::string& pickle) {
  try {
    load_pickle_bytes(pickle, "deep.pkl");
  } catch (const Error& e) {
    return e.what();
  }
  return "(accepted)";
}

// Nesting that would overflow the stack when torn down (a 2 MB pickle of 10^6 nested lists
// crashed before), and a list that holds itself (Python's [[...]]), are refused by name; 1000
// levels still load.
TEST(NumpyPickle, DeepOrSelfHoldingContainersAreRefused) {
  auto nested_lists = [](size_t n) {
    return std::string("\x80\x02", 2) + std::string(n, ']') + std::string(n - 1, 'a') + ".";
  };
  const std::string deep = refusal(nested_lists(1000000));
  std::cout << "[ deep ] " << deep << "\n";
  EXPECT_NE(deep.find("containers nested deeper than 1000 levels, or one that holds itself"),
            std::string::npos)
      << deep;
  EXPECT_EQ(refusal(nested_lists(1000)), "(accepted)");
  EXPECT_NE(refusal(nested_lists(1001)).find("nested deeper than 1000"), std::string::npos);
  const std::string cycle =
      refusal(std::string("\x80\x02]q\x00"
                          "h\x00"
                          "a.",
                          9));
  EXPECT_NE(cycle.find("or one that holds itself"), std::string::npos) << cycle;
  // Deep lists left on the stack of a pickle that never ends are taken apart without a crash.
  const std::string truncated = refusal(nested_lists(1000000).substr(0, 1500000));
  EXPECT_NE(truncated.find("deep.pkl"), std::string::npos) << truncated;
  // Tuples holding a non-data item (a global) nest as deep only up to the same bound.
  std::string tuples =
      "\x80\x02"
      "cnumpy\ndtype\n";
  for (int i = 0; i < 1100; ++i) tuples += "\x85";
  EXPECT_NE(refusal(tuples + ".").find("tuples nested deeper than 1000 levels"), std::string::npos)
      << refusal(tuples + ".");
}

// Resource bounds: one or two bytes of pickle per stack value, mark, memo entry or container, a
// million of any of them is refused by name (each would cost tens of bytes of memory).
TEST(NumpyPickle, MillionsOfStackValuesMarksMemoEntriesOrContainersAreRefused) {
  const std::string head("\x80\x04", 2);
  const size_t n = 1000001;
  const std::string stack = refusal(head + std::string(n, 'N') + ".");
  std::cout << "[ stack ] " << stack << "\n";
  EXPECT_NE(stack.find("more than 1000000 values on the stack; refused"), std::string::npos) << stack;
  EXPECT_NE(refusal(head + std::string(n, '(') + ".").find("more than 1000000 open marks"),
            std::string::npos);
  EXPECT_NE(refusal(head + "N" + std::string(n, '\x94') + ".").find("more than 1000000 memo entries"),
            std::string::npos);
  std::string lists = head;
  for (size_t i = 0; i < n; ++i) lists += "]0";
  EXPECT_NE(refusal(lists + "N.").find("more than 1000000 containers"), std::string::npos);
  // The same index stored again does not count twice.
  std::string same = head + "N";
  for (size_t i = 0; i < n; ++i) same += std::string("q\x00", 2);
  EXPECT_EQ(refusal(same + "."), "(accepted)");
}

}  // namespace
}  // namespace detkit::checkpoint

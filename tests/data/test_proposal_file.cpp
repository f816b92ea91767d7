// Detectron2's proposal files: the fixture's box_proposals.pkl (written by Detectron2's
// COCOEvaluator) read equal to the proposals it was made of; detkit's files read back by detkit
// and by Python's pickle (numpy float32 arrays, the same values); malformed files refused by name.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "detkit/checkpoint/state_dict.h"
#include "detkit/data/proposal_file.h"
#include "tests/support/error_of.h"
#include "tests/support/temp_dir.h"

namespace detkit::data {
namespace {

const std::string kRpnFixture = std::string(DETKIT_SHARED_DIR) + "/fixtures/detectron2_rpn/";

std::vector<ImageProposals> sample_proposals() {
  at::manual_seed(3);
  std::vector<ImageProposals> out;
  for (int64_t n : {5, 0, 17}) {
    at::Tensor xy = at::rand({n, 2}) * 100;
    out.push_back({n == 0 ? int64_t{3000000000} : 100 + n,  // an id beyond 32 bits
                   at::cat({xy, xy + at::rand({n, 2}) * 50}, 1), at::randn({n})});
  }
  return out;
}

void expect_same(const std::vector<ImageProposals>& got, const std::vector<ImageProposals>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].image_id, want[i].image_id);
    EXPECT_TRUE(at::equal(got[i].boxes, want[i].boxes.reshape({-1, 4}))) << "image " << i;
    EXPECT_TRUE(at::equal(got[i].objectness_logits, want[i].objectness_logits)) << "image " << i;
  }
}

TEST(ProposalFile, ReadsDetectron2sFileAsTheProposalsItWasMadeOf) {
  if (!std::filesystem::exists(kRpnFixture + "box_proposals.pkl"))
    GTEST_SKIP() << "fixture absent: " << kRpnFixture;
  const auto outputs = checkpoint::load_plain_tensor_dict(kRpnFixture + "outputs.pth");
  const auto proposals = read_proposal_file(kRpnFixture + "box_proposals.pkl");
  ASSERT_EQ(proposals.size(), 2u);
  EXPECT_EQ(proposals[0].image_id, 532481);
  EXPECT_EQ(proposals[1].image_id, 5001);
  for (int i = 0; i < 2; ++i) {
    const std::string n = std::to_string(i);
    EXPECT_TRUE(at::equal(proposals[i].boxes, outputs.at("proposal_boxes_" + n))) << i;
    EXPECT_TRUE(at::equal(proposals[i].objectness_logits, outputs.at("proposal_logits_" + n))) << i;
  }
}

TEST(ProposalFile, WrittenFilesReadBack) {
  testing::TempDir dir("proposal_file");
  const auto proposals = sample_proposals();
  write_proposal_file(dir.path("p.pkl"), proposals);
  expect_same(read_proposal_file(dir.path("p.pkl")), proposals);
  write_proposal_file(dir.path("none.pkl"), {});
  EXPECT_TRUE(read_proposal_file(dir.path("none.pkl")).empty());
}

TEST(ProposalFile, PythonsPickleReadsWrittenFilesAsNumpyArrays) {
  const std::string python = DETKIT_ORACLE_PYTHON;
  if (python.empty()) GTEST_SKIP() << "no oracle Python (DETKIT_ORACLE_PYTHON) with numpy";
  testing::TempDir dir("proposal_file_python");
  const auto proposals = sample_proposals();
  write_proposal_file(dir.path("p.pkl"), proposals);
  // Python checks the types and writes the arrays back as tensors.
  const std::string script =
      "import pickle, sys, numpy as np, torch\n"
      "d = pickle.load(open(sys.argv[1], 'rb'))\n"
      "assert sorted(d) == ['bbox_mode', 'boxes', 'ids', 'objectness_logits'], sorted(d)\n"
      "assert d['bbox_mode'] == 0\n"
      "out = {'ids': torch.tensor(d['ids'])}\n"
      "for k in ('boxes', 'objectness_logits'):\n"
      "  for i, a in enumerate(d[k]):\n"
      "    assert isinstance(a, np.ndarray) and a.dtype == np.float32, (k, type(a), a.dtype)\n"
      "    out[k + str(i)] = torch.from_numpy(a.copy())\n"
      "torch.save(out, sys.argv[2])\n";
  const std::string command = python + " -c \"" +
                              [&] {
                                std::string escaped;
                                for (char c : script)
                                  escaped += (c == '"' ? std::string("\\\"") : std::string(1, c));
                                return escaped;
                              }() +
                              "\" " + dir.path("p.pkl") + " " + dir.path("back.pth");
  if (std::system((python + " -c 'import numpy' 2>/dev/null").c_str()) != 0)
    GTEST_SKIP() << python << " has no numpy";
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  const auto back = checkpoint::load_plain_tensor_dict(dir.path("back.pth"));
  const at::Tensor ids = back.at("ids");
  for (size_t i = 0; i < proposals.size(); ++i) {
    const std::string n = std::to_string(i);
    EXPECT_EQ(ids[static_cast<int64_t>(i)].item<int64_t>(), proposals[i].image_id);
    EXPECT_TRUE(at::equal(back.at("boxes" + n), proposals[i].boxes)) << i;
    EXPECT_TRUE(at::equal(back.at("objectness_logits" + n), proposals[i].objectness_logits)) << i;
  }
}

TEST(ProposalFileErrors, MalformedFilesAreRefusedNamingTheFileAndTheKeyOrImage) {
  testing::TempDir dir("proposal_file_errors");
  using testing::error_of;
  using testing::expect_contains;
  const std::string missing = dir.path("missing.pkl");
  expect_contains(error_of([&] { read_proposal_file(missing); }), "missing.pkl");
  // Two images with the same id.
  auto twice = sample_proposals();
  twice[2].image_id = twice[0].image_id;
  write_proposal_file(dir.path("twice.pkl"), twice);
  const std::string e1 = error_of([&] { read_proposal_file(dir.path("twice.pkl")); });
  expect_contains(e1, "twice.pkl");
  expect_contains(e1, "image id 105: the image is listed twice");
  // A pickle of another shape: a list, not a dict.
  const std::string list = dir.write("list.pkl", std::string("\x80\x02]."));
  expect_contains(error_of([&] { read_proposal_file(list); }), "does not hold a dict");
  // {"boxes": [], "objectness_logits": [], "bbox_mode": MODE} (+ "ids": [] when with_ids).
  auto dict_pickle = [](bool with_ids, char mode) {
    auto text = [](const std::string& t) {
      return std::string("X") + static_cast<char>(t.size()) + std::string(3, '\0') + t;
    };
    std::string p = "\x80\x03}(" + text("boxes") + "]" + text("objectness_logits") + "]";
    if (with_ids) p += text("ids") + "]";
    return p + text("bbox_mode") + "K" + std::string(1, mode) + "u.";
  };
  const std::string no_ids = dir.write("no_ids.pkl", dict_pickle(false, 0));
  const std::string e2 = error_of([&] { read_proposal_file(no_ids); });
  expect_contains(e2, "no_ids.pkl");
  expect_contains(e2, "no key 'ids'");
  EXPECT_TRUE(read_proposal_file(dir.write("empty.pkl", dict_pickle(true, 0))).empty());
  // Box mode 2 (XYXY_REL) is not one Detectron2's loader accepts either.
  const std::string mode2 = dir.write("mode2.pkl", dict_pickle(true, 2));
  expect_contains(error_of([&] { read_proposal_file(mode2); }), "bbox_mode must be 0");
}

}  // namespace
}  // namespace detkit::data

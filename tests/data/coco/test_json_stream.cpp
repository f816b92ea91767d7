// The streaming top-level scanner: every element handed out once, in order, whatever the block
// and batch sizes; structure errors at their exact byte offsets.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "detkit/data/coco/json_stream.h"
#include "detkit/utils/error.h"
#include "tests/data/coco_test_files.h"
#include "tests/support/temp_dir.h"

namespace detkit::data {
namespace {

using nlohmann::json;

// Each array's elements as the streamer hands them out (each parsed from its "[e_k]" text), and
// the batches' sizes.
struct Streamed {
  std::map<std::string, std::vector<json>> elements;
  std::vector<TopLevelValue> keys;
  size_t batches = 0;
};

Streamed stream(const std::string& path, const std::vector<std::string>& keys, size_t batch_bytes,
                size_t block_bytes) {
  Streamed out;
  out.keys = stream_top_level_arrays(
      path, keys,
      [&](size_t key, ElementBatch& batch) {
        std::vector<json>& list = out.elements[keys[key]];
        EXPECT_EQ(batch.first_index(), list.size());
        json whole = json::parse(batch.from(0));  // the batch as one array parses too
        EXPECT_EQ(whole.size(), batch.size());
        for (size_t k = 0; k < batch.size(); ++k) {
          std::string_view text = batch.only(k);
          json one = json::parse(text);
          EXPECT_EQ(one.size(), 1u);
          EXPECT_EQ(one[0], whole[k]);
          list.push_back(one[0]);
        }
        ++out.batches;
      },
      batch_bytes, block_bytes);
  return out;
}

TEST(JsonStreamTest, HandsOutEveryElementOfCocoTinyAtAnyBlockSize) {
  DETKIT_SKIP_WITHOUT_COCO_TINY();
  std::string path = testing::coco_tiny_json("val2017");
  std::ifstream in(path);
  json expected = json::parse(in);
  for (auto [batch_bytes, block_bytes] :
       {std::pair<size_t, size_t>{2u << 20, 8u << 20}, {1000, 4096}, {1, 300}, {50000, 100000}}) {
    Streamed got = stream(path, {"annotations", "images", "categories"}, batch_bytes, block_bytes);
    for (const char* key : {"images", "annotations", "categories"}) {
      ASSERT_EQ(got.elements[key].size(), expected[key].size()) << key << " " << block_bytes;
      for (size_t i = 0; i < expected[key].size(); ++i) {
        ASSERT_EQ(got.elements[key][i], expected[key][i]) << key << "[" << i << "]";
      }
    }
    if (block_bytes == 300) EXPECT_GT(got.batches, expected["annotations"].size() / 2);
    ASSERT_EQ(got.keys.size(), expected.size());
    for (const TopLevelValue& value : got.keys) EXPECT_EQ(value.kind, JsonKind::kArray);
  }
}

TEST(JsonStreamTest, KeysKindsAndOffsets) {
  testing::TempDir dir("json_stream_keys");
  std::string text =
      " {\"a\": {\"x\": [1, \"]\"]}, \"images\": [{\"s\": \"}\\\"{[\"}, [], 3, \"s\"], \"n\": "
      "null, "
      "\"b\": true, \"f\": -1.5e3, \"s\": \"\\\\\", \"images2\": {}}  \n";
  std::string path = dir.write("a.json", text);
  Streamed got = stream(path, {"images", "n"}, 1, 64);
  ASSERT_EQ(got.elements["images"].size(), 4u);
  EXPECT_EQ(got.elements["images"][0], json::parse("{\"s\": \"}\\\"{[\"}"));
  EXPECT_EQ(got.elements["images"][3], "s");
  EXPECT_TRUE(got.elements["n"].empty());  // not an array: reported, not streamed
  std::vector<std::pair<std::string, JsonKind>> keys;
  for (const TopLevelValue& v : got.keys) {
    keys.emplace_back(v.key, v.kind);
    EXPECT_EQ(text.compare(v.offset - v.key.size() - 4, v.key.size() + 2, "\"" + v.key + "\""), 0)
        << v.key;
  }
  std::vector<std::pair<std::string, JsonKind>> expected = {
      {"a", JsonKind::kObject},      {"images", JsonKind::kArray}, {"n", JsonKind::kNull},
      {"b", JsonKind::kBool},        {"f", JsonKind::kNumber},     {"s", JsonKind::kString},
      {"images2", JsonKind::kObject}};
  EXPECT_EQ(keys, expected);
}

TEST(JsonStreamTest, AnElementLargerThanTheBlock) {
  testing::TempDir dir("json_stream_large");
  std::string big = "[";
  for (int i = 0; i < 5000; ++i) big += std::to_string(i) + (i + 1 < 5000 ? "," : "]");
  std::string path = dir.write("a.json", "{\"images\": [1, " + big + ", 2]}");
  Streamed got = stream(path, {"images"}, 10, 128);
  ASSERT_EQ(got.elements["images"].size(), 3u);
  EXPECT_EQ(got.elements["images"][1], json::parse(big));
}

// The scanner's error for `text`, or "" when it has none.
std::string scan_error(const std::string& text) {
  testing::TempDir dir("json_stream_errors");
  std::string path = dir.write("a.json", text);
  try {
    stream_top_level_arrays(
        path, {"images"}, [](size_t, ElementBatch&) {}, 16, 64);
  } catch (const Error& e) {
    std::string message = e.what();
    EXPECT_EQ(message.rfind(path + ": malformed JSON at byte offset ", 0), 0u) << message;
    return message.substr(path.size() + 2);
  }
  return "";
}

TEST(JsonStreamTest, StructureErrorsAtTheirOffsets) {
  EXPECT_EQ(scan_error("{\"images\": [{\"a\": [1, 2}]}"),
            "malformed JSON at byte offset 23 in images[0]: unexpected '}', expected ']'");
  EXPECT_EQ(scan_error("{\"images\": [1, 2,]}"),
            "malformed JSON at byte offset 17 in images[2]: expected a value, found ']'");
  EXPECT_EQ(scan_error("{\"images\": [1 2]}"),
            "malformed JSON at byte offset 14 in images[0]: expected ',' or ']', found '2'");
  EXPECT_EQ(scan_error("{\"images\": [\"abc"),
            "malformed JSON at byte offset 16 in images[0]: unexpected end of file: the string "
            "starting at byte offset 12 is not closed");
  EXPECT_EQ(scan_error("{\"other\": [[[]], \"images\": []}"),  // "other" never closes
            "malformed JSON at byte offset 29: unexpected '}', expected ']'");
  EXPECT_EQ(scan_error("{\"images\" []}"),
            "malformed JSON at byte offset 10: expected ':' after key \"images\"");
  EXPECT_EQ(scan_error("{\"images\": []}}"),
            "malformed JSON at byte offset 14: unexpected '}' after the top-level object");
  EXPECT_EQ(scan_error("{\"images\": [], }"),
            "malformed JSON at byte offset 15: expected a key string, found '}'");
  EXPECT_EQ(scan_error("{\"images\": []} \n {\"images\": []}"),
            "malformed JSON at byte offset 17: unexpected '{' after the top-level object");
  EXPECT_EQ(scan_error("{\"images\": [], \"x\": [1, 2, 3], \"y\": {}}"), "");
  EXPECT_EQ(scan_error("{}"), "");
}

}  // namespace
}  // namespace detkit::data

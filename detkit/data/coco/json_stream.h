#pragma once
// Streams a large JSON file whose top level is an object (a COCO annotation file) without
// holding the file in memory: it reads the file in blocks, finds where each element of chosen
// top-level arrays ("images", "annotations", "categories") begins and ends, and hands the
// elements out in batches of a few megabytes that simdjson then parses on their own. Peak
// memory is a couple of blocks, not the file's size plus a parse index of the same size.
//
// This scanner checks the structure: brackets nest and match, strings close, values are separated
// by commas and keys by colons. The contents of the elements (numbers, literals, escapes) are
// checked by whoever parses a batch; values of other keys are checked for structure only.
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace detkit::data {

/// Bytes readable (of any value) after every text an ElementBatch hands out: SIMDJSON_PADDING.
inline constexpr size_t kJsonPadding = 64;

/// Consecutive elements of one top-level array, in the streamer's buffer (valid during the
/// handler call). The texts it hands out are JSON arrays of some of these elements followed by
/// kJsonPadding readable bytes; making them overwrites the separators between elements.
class ElementBatch {
 public:
  size_t size() const { return begins_.size(); }
  /// Index, in the top-level array, of this batch's element 0.
  uint64_t first_index() const { return first_index_; }

  /// "[e_k, ..., e_last]": the elements from k on. Texts for elements before k become invalid,
  /// so ask for texts in increasing k.
  std::string_view from(size_t k);
  /// "[e_k]": element k alone (same rule as from()).
  std::string_view only(size_t k);

  /// File byte offset of element k's first byte.
  uint64_t element_offset(size_t k) const { return region_offset_ + begins_[k] - 1; }
  /// File byte offset of a position inside a text this batch handed out.
  uint64_t file_offset(const char* p) const {
    return region_offset_ + static_cast<uint64_t>(p - text_) - 1;
  }

  /// Used by the streamer: text[1...] holds the file's bytes from region_offset on, text[0] and
  /// the byte after the last element are free to overwrite, and kJsonPadding bytes after that
  /// are readable. The first element has array index first_index.
  void assign(char* text, uint64_t region_offset, uint64_t first_index);
  /// Used by the streamer: an element spanning file bytes [begin, end).
  void add_element(uint64_t begin, uint64_t end);

 private:
  char* text_ = nullptr;
  uint64_t region_offset_ = 0;  // file offset of text_[1]
  uint64_t first_index_ = 0;
  std::vector<uint32_t> begins_, ends_;  // element k is text_[begins_[k], ends_[k])
};

/// The kind of a JSON value, as error messages name it ("object", "array", ...).
enum class JsonKind { kObject, kArray, kString, kNumber, kBool, kNull };
const char* json_kind_name(JsonKind kind);

/// One top-level key, the kind of its value and the byte offset where the value starts.
struct TopLevelValue {
  std::string key;
  JsonKind kind;
  uint64_t offset;
};

/// key_index: position of the array's key in `array_keys`.
using ElementBatchHandler = std::function<void(size_t key_index, ElementBatch& batch)>;

/// Reads `path` once, `block_bytes` at a time. The elements of each top-level key listed in
/// `array_keys` whose value is an array go to `handler` in file order, in batches of about
/// `batch_bytes` (an element larger than a block is read whole). Returns every
/// top-level key in file order (duplicates included). Throws detkit::Error
/// "<path>: malformed JSON at byte offset N[ in <array>[i]]: <what>" when the structure is
/// broken, and "<path>: cannot open/read ..." when the file cannot be read. Exceptions thrown by
/// `handler` pass through.
std::vector<TopLevelValue> stream_top_level_arrays(const std::string& path,
                                                   const std::vector<std::string>& array_keys,
                                                   const ElementBatchHandler& handler,
                                                   size_t batch_bytes = 2u << 20,
                                                   size_t block_bytes = 8u << 20);

}  // namespace detkit::data

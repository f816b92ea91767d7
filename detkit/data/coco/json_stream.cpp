#include "detkit/data/coco/json_stream.h"

#include <algorithm>
#include <cstring>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "detkit/data/coco/block_reader.h"
#include "detkit/utils/error.h"

namespace detkit::data {

std::string_view ElementBatch::from(size_t k) {
  char* start = text_ + begins_[k] - 1;
  *start = '[';  // overwrites the separator before element k (or the batch's own '[')
  text_[ends_.back()] = ']';
  return {start, static_cast<size_t>(text_ + ends_.back() + 1 - start)};
}

std::string_view ElementBatch::only(size_t k) {
  char* start = text_ + begins_[k] - 1;
  *start = '[';
  text_[ends_[k]] = ']';  // the separator after element k
  return {start, ends_[k] - begins_[k] + 2};
}

void ElementBatch::assign(char* text, uint64_t region_offset, uint64_t first_index) {
  text_ = text;
  region_offset_ = region_offset;
  first_index_ = first_index;
  begins_.clear();
  ends_.clear();
}

void ElementBatch::add_element(uint64_t begin, uint64_t end) {
  if (end - region_offset_ + 1 > UINT32_MAX) {
    throw Error("a JSON batch of more than 4 GB: an element is too large");
  }
  begins_.push_back(static_cast<uint32_t>(begin - region_offset_ + 1));
  ends_.push_back(static_cast<uint32_t>(end - region_offset_ + 1));
}

const char* json_kind_name(JsonKind kind) {
  switch (kind) {
    case JsonKind::kObject:
      return "object";
    case JsonKind::kArray:
      return "array";
    case JsonKind::kString:
      return "string";
    case JsonKind::kNumber:
      return "number";
    case JsonKind::kBool:
      return "boolean";
    case JsonKind::kNull:
      return "null";
  }
  return "value";
}

namespace {

// The first of '"', '[', ']', '{', '}' in [p, end), or end.
const char* find_structural(const char* p, const char* end) {
#ifdef __SSE2__
  const __m128i quote = _mm_set1_epi8('"');
  const __m128i open = _mm_set1_epi8('{'), close = _mm_set1_epi8('}');
  const __m128i fold = _mm_set1_epi8(0x20);  // '[' | 0x20 == '{', ']' | 0x20 == '}'
  for (; end - p >= 16; p += 16) {
    __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    __m128i folded = _mm_or_si128(v, fold);
    __m128i hit =
        _mm_or_si128(_mm_cmpeq_epi8(v, quote),
                     _mm_or_si128(_mm_cmpeq_epi8(folded, open), _mm_cmpeq_epi8(folded, close)));
    if (int mask = _mm_movemask_epi8(hit)) return p + __builtin_ctz(mask);
  }
#endif
  for (; p < end; ++p) {
    char c = *p;
    if (c == '"' || c == '[' || c == ']' || c == '{' || c == '}') return p;
  }
  return end;
}

// The first '"' or '\\' in [p, end), or end.
const char* find_in_string(const char* p, const char* end) {
#ifdef __SSE2__
  const __m128i quote = _mm_set1_epi8('"'), backslash = _mm_set1_epi8('\\');
  for (; end - p >= 16; p += 16) {
    __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    __m128i hit = _mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash));
    if (int mask = _mm_movemask_epi8(hit)) return p + __builtin_ctz(mask);
  }
#endif
  for (; p < end; ++p) {
    if (*p == '"' || *p == '\\') return p;
  }
  return end;
}

bool is_space(int c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

std::string fmt_unclosed(const char* what, uint64_t start) {
  return std::string("unexpected end of file: the ") + what + " starting at byte offset " +
         std::to_string(start) + " is not closed";
}

class Scanner {
 public:
  Scanner(const std::string& path, const std::vector<std::string>& array_keys,
          const ElementBatchHandler& handler, size_t batch_bytes, size_t block_bytes)
      : path_(path),
        reader_(path, block_bytes),
        refill_margin_(block_bytes / 8),
        array_keys_(array_keys),
        handler_(handler),
        batch_bytes_(batch_bytes) {}

  std::vector<TopLevelValue> run() {
    std::vector<TopLevelValue> values;
    skip_space();
    if (peek() != '{') fail(pos_, "the top level must be an object, found " + describe_next());
    ++pos_;
    skip_space();
    if (peek() == '}') {
      ++pos_;
    } else {
      for (;;) {
        skip_space();
        if (peek() != '"') fail(pos_, "expected a key string, found " + describe_next());
        std::string key = read_key();
        skip_space();
        if (peek() != ':') fail(pos_, "expected ':' after key \"" + key + "\"");
        ++pos_;
        skip_space();
        int c = peek();
        if (c < 0) fail(pos_, "expected the value of \"" + key + "\", found end of file");
        values.push_back({key, kind_of(c), pos_});
        auto slot = std::find(array_keys_.begin(), array_keys_.end(), key);
        if (slot != array_keys_.end() && c == '[') {
          stream_array(static_cast<size_t>(slot - array_keys_.begin()), key);
        } else {
          skip_value();
        }
        skip_space();
        c = peek();
        if (c == ',') {
          ++pos_;
          continue;
        }
        if (c == '}') {
          ++pos_;
          break;
        }
        fail(pos_,
             "expected ',' or '}' after the value of \"" + key + "\", found " + describe_next());
      }
    }
    skip_space();
    if (peek() >= 0) fail(pos_, "unexpected " + describe_next() + " after the top-level object");
    return values;
  }

 private:
  [[noreturn]] void fail(uint64_t offset, const std::string& what) const {
    std::string where =
        context_key_ ? " in " + *context_key_ + "[" + std::to_string(context_index_) + "]" : "";
    throw Error(path_ + ": malformed JSON at byte offset " + std::to_string(offset) + where + ": " +
                what);
  }

  static JsonKind kind_of(int c) {
    switch (c) {
      case '{':
        return JsonKind::kObject;
      case '[':
        return JsonKind::kArray;
      case '"':
        return JsonKind::kString;
      case 't':
      case 'f':
        return JsonKind::kBool;
      case 'n':
        return JsonKind::kNull;
      default:
        return JsonKind::kNumber;
    }
  }

  // Reads more, keeping the pending batch (or nothing before pos_) in memory.
  bool more() { return reader_.fill(keep_batch_ ? batch_begin_ - 1 : pos_); }

  int peek() {
    while (pos_ >= reader_.end_offset()) {
      if (!more()) return -1;
    }
    return static_cast<unsigned char>(*reader_.ptr(pos_));
  }

  std::string describe_next() {
    int c = peek();
    if (c < 0) return "end of file";
    if (c >= 0x20 && c < 0x7f) return std::string("'") + static_cast<char>(c) + "'";
    return "byte " + std::to_string(c);
  }

  void skip_space() {
    while (is_space(peek())) ++pos_;
  }

  // A key string at pos_, returned without its quotes and undecoded (escapes kept as written).
  std::string read_key() {
    uint64_t start = pos_++;
    std::string key;
    for (;;) {
      int c = peek();
      if (c < 0) fail(pos_, fmt_unclosed("string", start));
      ++pos_;
      if (c == '"') return key;
      key += static_cast<char>(c);
      if (c == '\\') {
        if (peek() < 0) fail(pos_, fmt_unclosed("string", start));
        key += static_cast<char>(peek());
        ++pos_;
      }
    }
  }

  void skip_value() {
    int c = peek();
    if (c == '{' || c == '[') {
      skip_nested();
    } else if (c == '"') {
      skip_nested();  // a lone string: the same scan ends at its closing quote
    } else {
      uint64_t start = pos_;
      while ((c = peek()) >= 0 && !is_space(c) && c != ',' && c != ']' && c != '}') ++pos_;
      if (pos_ == start) fail(pos_, "expected a value, found " + describe_next());
    }
  }

  // Skips an object, an array or a string starting at pos_, matching brackets.
  void skip_nested() {
    const uint64_t start = pos_;
    std::string expected_closers;  // stack: the closer each open bracket needs
    bool in_string = false, escaped = false;
    for (;;) {
      if (pos_ >= reader_.end_offset() && !more()) {
        fail(pos_, fmt_unclosed(in_string ? "string" : "value", start));
      }
      const char* window = reader_.ptr(pos_);
      const char* end = reader_.ptr(reader_.end_offset());
      const char* p = window;
      while (p < end) {
        if (escaped) {
          escaped = false;
          ++p;
        } else if (in_string) {
          p = find_in_string(p, end);
          if (p == end) break;
          escaped = *p == '\\';
          in_string = *p != '"';
          ++p;
          if (!in_string && expected_closers.empty()) {
            pos_ += static_cast<uint64_t>(p - window);
            return;
          }
        } else {
          p = find_structural(p, end);
          if (p == end) break;
          char c = *p++;
          if (c == '"') {
            in_string = true;
          } else if (c == '[' || c == '{') {
            expected_closers.push_back(c == '[' ? ']' : '}');
          } else if (expected_closers.empty() || expected_closers.back() != c) {
            uint64_t at = pos_ + static_cast<uint64_t>(p - 1 - window);
            fail(at, std::string("unexpected '") + c + "'" +
                         (expected_closers.empty()
                              ? ""
                              : std::string(", expected '") + expected_closers.back() + "'"));
          } else {
            expected_closers.pop_back();
            if (expected_closers.empty()) {
              pos_ += static_cast<uint64_t>(p - window);
              return;
            }
          }
        }
      }
      pos_ += static_cast<uint64_t>(p - window);
    }
  }

  // The elements of the array at pos_, handed out in batches.
  void stream_array(size_t key_index, const std::string& key) {
    ++pos_;  // '['
    uint64_t index = 0, batch_first_index = 0;
    std::vector<std::pair<uint64_t, uint64_t>> pending;  // [begin, end) of unsent elements
    skip_space();
    if (peek() == ']') {
      ++pos_;
      return;
    }
    for (;;) {
      skip_space();
      if (!pending.empty() && pos_ + refill_margin_ > reader_.end_offset()) {
        send(key_index, pending, batch_first_index);
        pending.clear();
        keep_batch_ = false;
      }
      context_key_ = &key;
      context_index_ = index;
      uint64_t begin = pos_;
      if (pending.empty()) {
        batch_begin_ = begin;
        batch_first_index = index;
        keep_batch_ = true;
      }
      skip_value();
      pending.emplace_back(begin, pos_);
      ++index;
      skip_space();
      int c = peek();
      if (c != ',' && c != ']') fail(pos_, "expected ',' or ']', found " + describe_next());
      ++pos_;
      if (c == ']' || pos_ - batch_begin_ >= batch_bytes_) {
        send(key_index, pending, batch_first_index);
        pending.clear();
        keep_batch_ = false;
      }
      if (c == ']') break;
    }
    context_key_ = nullptr;
  }

  void send(size_t key_index, const std::vector<std::pair<uint64_t, uint64_t>>& elements,
            uint64_t first_index) {
    uint64_t region = elements.front().first;  // > 0: at least '{' and '[' come before it
    batch_.assign(reader_.ptr(region - 1), region, first_index);
    for (const auto& [begin, end] : elements) batch_.add_element(begin, end);
    handler_(key_index, batch_);
  }

  const std::string& path_;
  BlockReader reader_;
  // A batch is handed out early when this little is left in the buffer, so that refilling moves
  // a few elements, not the batch.
  size_t refill_margin_;
  const std::vector<std::string>& array_keys_;
  const ElementBatchHandler& handler_;
  size_t batch_bytes_;
  uint64_t pos_ = 0;         // file offset of the next byte to look at
  bool keep_batch_ = false;  // bytes from batch_begin_ on must stay in memory
  uint64_t batch_begin_ = 0;
  const std::string* context_key_ = nullptr;  // "annotations" while inside its element
  uint64_t context_index_ = 0;                // ... number context_index_
  ElementBatch batch_;
};

}  // namespace

std::vector<TopLevelValue> stream_top_level_arrays(const std::string& path,
                                                   const std::vector<std::string>& array_keys,
                                                   const ElementBatchHandler& handler,
                                                   size_t batch_bytes, size_t block_bytes) {
  Scanner scanner(path, array_keys, handler, batch_bytes, block_bytes);
  return scanner.run();
}

}  // namespace detkit::data

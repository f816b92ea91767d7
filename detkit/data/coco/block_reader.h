#pragma once
// BlockReader: a sliding window onto a file, read a block at a time. Bytes the caller still needs
// (an element being scanned, a batch not yet parsed) stay; the rest is dropped on each refill.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "detkit/utils/progress.h"

namespace detkit::data {

class BlockReader {
 public:
  /// Opens `path`; throws detkit::Error naming it when it cannot.
  BlockReader(const std::string& path, size_t block_bytes);
  ~BlockReader();
  BlockReader(const BlockReader&) = delete;
  BlockReader& operator=(const BlockReader&) = delete;

  /// File bytes [base, end_offset()) are in memory, followed by kJsonPadding spare bytes.
  uint64_t end_offset() const { return base_ + used_; }
  /// The in-memory byte at a file offset (not below the last refill's `keep_from`).
  char* ptr(uint64_t offset) { return buffer_.data() + (offset - base_); }

  /// Reads more of the file, dropping the bytes before `keep_from`; the window grows when what
  /// is kept fills more than half of it. False at end of file.
  bool fill(uint64_t keep_from);

 private:
  std::string path_;
  int fd_ = -1;
  std::vector<char> buffer_;
  size_t used_ = 0;    // bytes of buffer_ holding file data
  uint64_t base_ = 0;  // file offset of buffer_[0]
  bool eof_ = false;
  std::unique_ptr<Progress> progress_;  // "Reading <path>: 120.5/448.6 MB ..." (a regular file)
};

}  // namespace detkit::data

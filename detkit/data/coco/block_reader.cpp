#include "detkit/data/coco/block_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "detkit/data/coco/json_stream.h"
#include "detkit/utils/error.h"

namespace detkit::data {

BlockReader::BlockReader(const std::string& path, size_t block_bytes) : path_(path) {
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) throw Error("cannot open '" + path + "': " + std::strerror(errno));
  buffer_.resize(std::max<size_t>(block_bytes, 64) + kJsonPadding);
  struct stat info {};
  if (::fstat(fd_, &info) == 0 && S_ISREG(info.st_mode))
    progress_ = std::make_unique<Progress>("Reading " + path, static_cast<double>(info.st_size) / 1e6,
                                           "MB");
}

BlockReader::~BlockReader() { ::close(fd_); }

bool BlockReader::fill(uint64_t keep_from) {
  if (eof_) return false;
  size_t drop = static_cast<size_t>(std::min(keep_from, end_offset()) - base_);
  std::memmove(buffer_.data(), buffer_.data() + drop, used_ - drop);
  used_ -= drop;
  base_ += drop;
  size_t capacity = buffer_.size() - kJsonPadding;
  if (used_ * 2 > capacity) {  // a huge element
    capacity *= 2;
    buffer_.resize(capacity + kJsonPadding);
  }
  for (;;) {
    ssize_t n = ::read(fd_, buffer_.data() + used_, capacity - used_);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw Error("cannot read '" + path_ + "': " + std::strerror(errno));
    if (n == 0) eof_ = true;
    used_ += static_cast<size_t>(n);
    if (progress_) progress_->update(static_cast<double>(end_offset()) / 1e6);
    return n > 0;
  }
}

}  // namespace detkit::data

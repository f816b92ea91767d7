#include "detkit/checkpoint/zip_writer.h"

#include <cstdint>
#include <limits>

#include "detkit/checkpoint/zip_archive.h"
#include "detkit/utils/error.h"

namespace detkit::checkpoint {
namespace {

constexpr size_t kAlignment = 64;  // as PyTorchStreamWriter: lets readers map tensors in place
using namespace zip_format;  // NOLINT(build/namespaces)

void put(std::string& out, uint64_t value, int width) {
  for (int i = 0; i < width; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xFF));
}

void check_fits(uint64_t value, const std::string& name) {
  if (value >= std::numeric_limits<uint32_t>::max())
    throw Error("cannot write '" + name + "': checkpoints of 4 GiB or more are not supported");
}

}  // namespace

void ZipWriter::add(const std::string& name, std::string_view data) {
  const uint64_t offset = out_.size();
  check_fits(offset + data.size() + kAlignment + name.size() + kLocalSize, name);
  const uint32_t crc = crc32(data);
  // Padding extra field "FB" so that the data starts on a 64-byte boundary.
  const size_t start = offset + kLocalSize + name.size() + 4;
  const size_t padding = (kAlignment - start % kAlignment) % kAlignment;
  auto header = [&](std::string& out, bool central) {
    put(out, central ? kCentralHeader : kLocalHeader, 4);
    if (central) put(out, 20, 2);  // version made by
    put(out, 20, 2);               // version needed
    put(out, 0, 2);                // flags
    put(out, 0, 2);                // method: stored
    put(out, 0, 4);                // time and date
    put(out, crc, 4);
    put(out, data.size(), 4);
    put(out, data.size(), 4);
    put(out, name.size(), 2);
    put(out, central ? 0 : 4 + padding, 2);
    if (central) {
      put(out, 0, 2);  // comment length
      put(out, 0, 2);  // disk
      put(out, 0, 2);  // internal attributes
      put(out, 0, 4);  // external attributes
      put(out, offset, 4);
    }
    out += name;
  };
  header(out_, false);
  put(out_, 0x4246, 2);  // "FB"
  put(out_, padding, 2);
  out_.append(padding, 'Z');
  out_.append(data.data(), data.size());
  header(directory_, true);
  ++entries_;
}

std::string ZipWriter::finish() {
  const uint64_t directory_offset = out_.size();
  check_fits(directory_offset + directory_.size(), "central directory");
  if (entries_ >= 0xFFFF) throw Error("cannot write a zip archive of 65535 entries or more");
  out_ += directory_;
  put(out_, kEndOfCentralDirectory, 4);
  put(out_, 0, 4);  // disk numbers
  put(out_, entries_, 2);
  put(out_, entries_, 2);
  put(out_, directory_.size(), 4);
  put(out_, directory_offset, 4);
  put(out_, 0, 2);  // comment length
  return std::move(out_);
}

}  // namespace detkit::checkpoint

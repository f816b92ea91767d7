#include "detkit/checkpoint/zip_archive.h"

#include <array>

#include "detkit/utils/error.h"

namespace detkit::checkpoint {
namespace {

using namespace zip_format;  // NOLINT(build/namespaces)

std::array<uint32_t, 256> make_crc_table() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    table[i] = c;
  }
  return table;
}

}  // namespace

uint32_t crc32(std::string_view data) {
  static const std::array<uint32_t, 256> table = make_crc_table();
  uint32_t c = 0xFFFFFFFFu;
  for (unsigned char byte : data) c = table[(c ^ byte) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

namespace {

// Little-endian fields of `bytes`, bounds-checked by the caller's `need`.
struct Cursor {
  const std::string& bytes;
  uint64_t get(uint64_t pos, int width) const {
    uint64_t value = 0;
    for (int i = width - 1; i >= 0; --i)
      value = (value << 8) | static_cast<unsigned char>(bytes[pos + i]);
    return value;
  }
  bool fits(uint64_t pos, uint64_t size) const {
    return pos <= bytes.size() && size <= bytes.size() - pos;
  }
};

}  // namespace

ZipArchive::ZipArchive(std::string bytes, std::string source)
    : bytes_(std::move(bytes)), source_(std::move(source)) {
  parse_central_directory();
}

void ZipArchive::fail(const std::string& what) const {
  throw Error("cannot read '" + source_ + "': " + what);
}

void ZipArchive::parse_central_directory() {
  Cursor at{bytes_};
  // The end record sits in the last 22 + 65535 (comment) bytes.
  if (bytes_.size() < kEndSize) fail("truncated or corrupt zip archive (file too short)");
  uint64_t end = bytes_.size() - kEndSize;
  const uint64_t lowest = end > 0xFFFF ? end - 0xFFFF : 0;
  while (!(at.get(end, 4) == kEndOfCentralDirectory &&
           end + kEndSize + at.get(end + 20, 2) == bytes_.size())) {
    if (end == lowest) fail("truncated or corrupt zip archive (no end-of-central-directory)");
    --end;
  }
  if (at.get(end + 4, 2) != 0 || at.get(end + 6, 2) != 0) fail("multi-disk zip archives");
  uint64_t count = at.get(end + 10, 2);
  uint64_t directory = at.get(end + 16, 4);
  if (end >= kLocatorSize && at.get(end - kLocatorSize, 4) == kZip64Locator) {
    uint64_t zip64_end = at.get(end - kLocatorSize + 8, 8);
    if (!at.fits(zip64_end, kZip64EndSize) || at.get(zip64_end, 4) != kZip64End)
      fail("corrupt zip archive (bad ZIP64 end record)");
    count = at.get(zip64_end + 32, 8);
    directory = at.get(zip64_end + 48, 8);
  }
  // The directory must lie before the end record, and hold the entries it declares: each takes
  // at least 46 bytes, so a count the file has no room for is refused before anything is read.
  if (directory > end)
    fail("corrupt zip archive (central directory at byte " + std::to_string(directory) +
         ", past the end record at byte " + std::to_string(end) + ")");
  const uint64_t room = (end - directory) / kCentralSize;
  if (count > room)
    fail("corrupt zip archive (it declares " + std::to_string(count) +
         " entries; its central directory has room for at most " + std::to_string(room) + ")");
  uint64_t pos = directory;
  for (uint64_t i = 0; i < count; ++i) {
    if (!at.fits(pos, kCentralSize) || at.get(pos, 4) != kCentralHeader)
      fail("truncated or corrupt zip archive (central directory entry " + std::to_string(i) + ")");
    const uint64_t flags = at.get(pos + 8, 2), method = at.get(pos + 10, 2);
    const uint32_t crc = static_cast<uint32_t>(at.get(pos + 16, 4));
    uint64_t compressed = at.get(pos + 20, 4), size = at.get(pos + 24, 4);
    const uint64_t name_len = at.get(pos + 28, 2), extra_len = at.get(pos + 30, 2);
    const uint64_t comment_len = at.get(pos + 32, 2);
    uint64_t local = at.get(pos + 42, 4);
    if (!at.fits(pos + kCentralSize, name_len + extra_len + comment_len))
      fail("truncated or corrupt zip archive (central directory)");
    std::string name = bytes_.substr(pos + kCentralSize, name_len);
    // ZIP64 extra field: 8-byte values for whichever 4-byte fields hold 0xFFFFFFFF, in order.
    uint64_t extra = pos + kCentralSize + name_len, extra_end = extra + extra_len;
    while (extra + 4 <= extra_end) {
      uint64_t id = at.get(extra, 2), len = at.get(extra + 2, 2), field = extra + 4;
      if (field + len > extra_end) fail("corrupt zip archive (extra field of '" + name + "')");
      if (id == kZip64ExtraId) {
        for (uint64_t* value : {&size, &compressed, &local}) {
          if (*value != 0xFFFFFFFFu) continue;
          if (field + 8 > extra + 4 + len) fail("corrupt ZIP64 field of '" + name + "'");
          *value = at.get(field, 8);
          field += 8;
        }
      }
      extra += 4 + len;
    }
    if (flags & 1) fail("entry '" + name + "' is encrypted");
    if (method != 0)
      fail("entry '" + name + "' is compressed (method " + std::to_string(method) +
           "); torch.save writes stored entries only — was the file re-zipped?");
    if (compressed != size) fail("corrupt zip archive (sizes of '" + name + "' disagree)");
    if (entries_.count(name))  // which of the two would a reader take?
      fail("corrupt zip archive (entry '" + name + "' appears twice)");
    entries_[name] = locate_data(name, local, size, crc);
    names_.push_back(std::move(name));
    pos += kCentralSize + name_len + extra_len + comment_len;
  }
}

ZipArchive::Entry ZipArchive::locate_data(const std::string& name, uint64_t local, uint64_t size,
                                          uint32_t crc) const {
  Cursor at{bytes_};
  if (!at.fits(local, kLocalSize) || at.get(local, 4) != kLocalHeader)
    fail("truncated or corrupt zip archive (local header of '" + name + "')");
  uint64_t data = local + kLocalSize + at.get(local + 26, 2) + at.get(local + 28, 2);
  if (!at.fits(data, size))
    fail("truncated zip archive (entry '" + name + "' declares " + std::to_string(size) +
         " bytes from byte " + std::to_string(data) + ", past the end of the " +
         std::to_string(bytes_.size()) + "-byte file)");
  return {data, size, crc};
}

std::string_view ZipArchive::read(const std::string& name) const {
  auto it = entries_.find(name);
  if (it == entries_.end()) fail("the archive has no entry '" + name + "'");
  std::string_view data(bytes_.data() + it->second.data_offset, it->second.size);
  if (crc32(data) != it->second.crc32) fail("entry '" + name + "' is corrupt (CRC mismatch)");
  return data;
}

}  // namespace detkit::checkpoint

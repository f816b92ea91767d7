#pragma once
// A reader for the zip archives torch.save writes (since PyTorch 1.6): every entry stored
// uncompressed, sizes in the central directory (ZIP64 when large). Anything else — compressed or
// encrypted entries, multi-disk archives, truncated files — is refused with the file's name.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace detkit::checkpoint {

/// The ZIP records' signatures and fixed sizes (PKWARE's APPNOTE 4.3), read by ZipArchive and
/// written by ZipWriter.
namespace zip_format {
constexpr uint32_t kLocalHeader = 0x04034b50;
constexpr uint32_t kCentralHeader = 0x02014b50;
constexpr uint32_t kEndOfCentralDirectory = 0x06054b50;
constexpr uint32_t kZip64End = 0x06064b50;
constexpr uint32_t kZip64Locator = 0x07064b50;
constexpr uint16_t kZip64ExtraId = 0x0001;
constexpr size_t kEndSize = 22, kCentralSize = 46, kLocalSize = 30, kLocatorSize = 20;
constexpr size_t kZip64EndSize = 56;
}  // namespace zip_format

class ZipArchive {
 public:
  /// Parses `bytes` (the whole file); `source` names the file in errors.
  ZipArchive(std::string bytes, std::string source);

  /// Entry names in archive order ("archive/data.pkl", "archive/data/0", ...).
  const std::vector<std::string>& names() const { return names_; }
  bool has(const std::string& name) const { return entries_.count(name) > 0; }
  /// The entry's bytes after checking their CRC-32; throws detkit::Error for a missing entry.
  std::string_view read(const std::string& name) const;
  const std::string& source() const { return source_; }

 private:
  struct Entry {
    uint64_t data_offset = 0;
    uint64_t size = 0;
    uint32_t crc32 = 0;
  };
  void parse_central_directory();
  Entry locate_data(const std::string& name, uint64_t local_offset, uint64_t size,
                    uint32_t crc) const;
  [[noreturn]] void fail(const std::string& what) const;

  std::string bytes_;
  std::string source_;
  std::vector<std::string> names_;
  std::map<std::string, Entry> entries_;
};

/// CRC-32 (zip's polynomial 0xEDB88320) of `data`.
uint32_t crc32(std::string_view data);

}  // namespace detkit::checkpoint

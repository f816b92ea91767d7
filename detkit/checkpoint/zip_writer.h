#pragma once
// Writes the zip layout torch.save uses: stored (uncompressed) entries whose data start at a
// multiple of 64 bytes, CRC-32 in the headers. Archives of 4 GiB or more (ZIP64) are refused.
#include <string>
#include <string_view>

namespace detkit::checkpoint {

class ZipWriter {
 public:
  /// Appends an entry named `name` holding `data`.
  void add(const std::string& name, std::string_view data);
  /// The finished archive (central directory and end record appended); the writer is spent.
  std::string finish();

 private:
  std::string out_;
  std::string directory_;
  size_t entries_ = 0;
};

}  // namespace detkit::checkpoint

// The stored-zip writer and reader: CRC-32, 64-byte aligned data, entries read back by name.
#include <gtest/gtest.h>

#include "detkit/checkpoint/zip_archive.h"
#include "detkit/checkpoint/zip_writer.h"
#include "detkit/utils/error.h"

namespace detkit::checkpoint {
namespace {

TEST(Zip, Crc32OfTheCheckString) {
  EXPECT_EQ(crc32("123456789"), 0xCBF43926u);
  EXPECT_EQ(crc32(""), 0u);
}

TEST(Zip, WrittenEntriesReadBackAlignedAndInOrder) {
  ZipWriter writer;
  writer.add("archive/data.pkl", "pickle");
  writer.add("archive/data/0", std::string(100, '\x7f'));
  writer.add("archive/version", "3\n");
  std::string bytes = writer.finish();
  const std::string copy = bytes;
  ZipArchive zip(std::move(bytes), "test.pth");
  EXPECT_EQ(zip.names(),
            (std::vector<std::string>{"archive/data.pkl", "archive/data/0", "archive/version"}));
  const std::string_view data = zip.read("archive/data/0");
  EXPECT_EQ(data, std::string(100, '\x7f'));
  EXPECT_EQ(static_cast<size_t>(data.data() - zip.read("archive/data.pkl").data()) % 64, 0u);
  EXPECT_EQ(zip.read("archive/version"), "3\n");
  EXPECT_FALSE(zip.has("archive/data/1"));
  EXPECT_THROW(zip.read("archive/data/1"), Error);
  // Without its end record (the last byte cut off) the archive is refused.
  EXPECT_THROW(ZipArchive(copy.substr(0, copy.size() - 1), "cut.pth"), Error);
}

}  // namespace
}  // namespace detkit::checkpoint

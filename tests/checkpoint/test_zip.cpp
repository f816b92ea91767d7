// The stored-zip writer and reader: CRC-32, 64-byte aligned data, entries read back by name.
#include <gtest/gtest.h>

#include <iostream>

#include "detkit/checkpoint/zip_archive.h"
#include "detkit/checkpoint/zip_writer.h"
#include "detkit/utils/error.h"
#include "tests/support/error_of.h"

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

std::string three_entries() {
  ZipWriter writer;
  writer.add("archive/data.pkl", "pickle");
  writer.add("archive/data/0", std::string(100, '\x7f'));
  writer.add("archive/version", "3\n");
  return writer.finish();
}

void put_le(std::string& bytes, size_t pos, uint64_t value, int width) {
  for (int i = 0; i < width; ++i) bytes[pos + i] = static_cast<char>((value >> (8 * i)) & 0xFF);
}

// What reading `bytes` as 'bad.pth' is told.
std::string error_of(const std::string& bytes) {
  const std::string message = testing::error_of([&] { ZipArchive(bytes, "bad.pth"); });
  std::cout << "[ message ] " << message << "\n";
  return message;
}

// Resource bounds: what the end record and the directory declare is checked against the file.
TEST(Zip, DeclaredCountsSizesAndOffsetsBeyondTheFileAreRefused) {
  const std::string good = three_entries();
  const size_t end = good.size() - 22;  // no comment: the end record is the last 22 bytes
  std::string many = good;
  put_le(many, end + 8, 60000, 2);
  put_le(many, end + 10, 60000, 2);
  EXPECT_EQ(error_of(many),
            "cannot read 'bad.pth': corrupt zip archive (it declares 60000 entries; its central "
            "directory has room for at most 3)");
  std::string far = good;
  put_le(far, end + 16, 0xFFFFFFF0u, 4);
  EXPECT_EQ(error_of(far), "cannot read 'bad.pth': corrupt zip archive (central directory at byte " +
                               std::to_string(0xFFFFFFF0u) + ", past the end record at byte " +
                               std::to_string(end) + ")");
  // The first directory entry declares 2^32 - 2 bytes of data.
  std::string big = good;
  const size_t first = good.find("PK\x01\x02");
  ASSERT_NE(first, std::string::npos);
  put_le(big, first + 20, 0xFFFFFFFEu, 4);
  put_le(big, first + 24, 0xFFFFFFFEu, 4);
  const std::string message = error_of(big);
  EXPECT_EQ(message.rfind("cannot read 'bad.pth': truncated zip archive (entry 'archive/data.pkl' "
                          "declares 4294967294 bytes from byte ", 0), 0u) << message;
  EXPECT_NE(message.find(", past the end of the " + std::to_string(good.size()) + "-byte file)"),
            std::string::npos) << message;
}

TEST(Zip, AnEntryNamedTwiceIsRefused) {
  ZipWriter writer;
  writer.add("archive/data.pkl", "one");
  writer.add("archive/data.pkl", "two");
  EXPECT_EQ(error_of(writer.finish()),
            "cannot read 'bad.pth': corrupt zip archive (entry 'archive/data.pkl' appears twice)");
}

}  // namespace
}  // namespace detkit::checkpoint

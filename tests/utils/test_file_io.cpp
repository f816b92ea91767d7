#include <gtest/gtest.h>

#include <filesystem>

#include "detkit/utils/error.h"
#include "detkit/utils/file_io.h"

namespace detkit {
namespace fs = std::filesystem;

TEST(FileIO, AtomicWriteReplacesWholeFileAndLeavesNoTemporary) {
  fs::path dir = fs::temp_directory_path() / "detkit_test_file_io";
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::string path = (dir / "out.txt").string();
  atomic_write(path, "first version, longer");
  atomic_write(path, "second");
  EXPECT_EQ(read_file(path), "second");
  size_t files = 0;
  for (auto& entry : fs::directory_iterator(dir)) files += entry.is_regular_file();
  EXPECT_EQ(files, 1u);
  fs::remove_all(dir);
}

TEST(FileIO, ErrorsNameThePath) {
  try {
    read_file("/nonexistent/detkit.txt");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/detkit.txt"), std::string::npos) << e.what();
  }
  EXPECT_THROW(atomic_write("/nonexistent/dir/x.txt", "x"), Error);
}

}  // namespace detkit

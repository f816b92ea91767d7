// atomic_write and append_whole: whole files or none, and a full disk (here a file-size limit,
// as `ulimit -f` sets it) is an error naming the file and the errno, leaving nothing half-written.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <filesystem>
#include <functional>
#include <iostream>

#include "detkit/utils/error.h"
#include "detkit/utils/file_io.h"
#include "detkit/utils/stop_signal.h"
#include "tests/support/error_of.h"
#include "tests/support/temp_dir.h"

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

namespace {
// While alive, files this process writes may not grow beyond `bytes` (RLIMIT_FSIZE, the soft
// limit only, so that it can be put back); writes past it fail with EFBIG.
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    ignore_file_size_signal();
    getrlimit(RLIMIT_FSIZE, &old_);
    rlimit limit = old_;
    limit.rlim_cur = bytes;
    EXPECT_EQ(setrlimit(RLIMIT_FSIZE, &limit), 0);
  }
  ~FileSizeLimit() { setrlimit(RLIMIT_FSIZE, &old_); }

 private:
  rlimit old_{};
};

using testing::error_of;
}  // namespace

TEST(FileIO, AtomicWriteOnAFullDiskNamesTheFileAndKeepsTheOldOne) {
  testing::TempDir dir("file_io_full");
  const std::string path = dir.path("model_0000009.pth");
  atomic_write(path, "the previous checkpoint");
  std::string message;
  {
    FileSizeLimit limit(1000);
    message = error_of([&] { atomic_write(path, std::string(5000, 'x')); });
  }
  std::cout << "[ message ] " << message << "\n";
  EXPECT_NE(message.find("cannot write '" + path + "'"), std::string::npos) << message;
  EXPECT_NE(message.find("(EFBIG)"), std::string::npos) << message;
  EXPECT_EQ(read_file(path), "the previous checkpoint");
  size_t files = 0;
  for (auto& entry : fs::directory_iterator(dir.path())) files += entry.is_regular_file();
  EXPECT_EQ(files, 1u) << "a temporary file was left behind";
}

TEST(FileIO, AppendWholeCutsAPartialRecordOff) {
  testing::TempDir dir("file_io_append");
  const std::string path = dir.path("metrics.json");
  append_whole(path, "{\"iteration\": 0}\n");
  append_whole(path, "{\"iteration\": 1}\n");
  const std::string before = read_file(path);
  std::string message;
  {
    FileSizeLimit limit(before.size() + 10);  // part of the next record fits, not all of it
    message = error_of([&] { append_whole(path, std::string(100, 'y') + "\n"); });
  }
  EXPECT_NE(message.find("cannot append to '" + path + "'"), std::string::npos) << message;
  EXPECT_NE(message.find("(EFBIG)"), std::string::npos) << message;
  EXPECT_EQ(read_file(path), before);
  append_whole(path, "{\"iteration\": 2}\n");  // the next append goes on where it was
  EXPECT_EQ(read_file(path), before + "{\"iteration\": 2}\n");
}

}  // namespace detkit

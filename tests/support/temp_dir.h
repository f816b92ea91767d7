#pragma once
// A fresh directory under the system temp folder, removed with its contents at scope exit.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace detkit::testing {

class TempDir {
 public:
  explicit TempDir(const std::string& name) {
    path_ = std::filesystem::temp_directory_path() /
            ("detkit_" + name + "_" + std::to_string(::getpid()));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  /// Writes `content` to `relative` (creating folders) and returns its full path.
  std::string write(const std::string& relative, const std::string& content) const {
    auto file = path_ / relative;
    std::filesystem::create_directories(file.parent_path());
    std::ofstream(file) << content;
    return file.string();
  }
  std::string path(const std::string& relative = "") const { return (path_ / relative).string(); }

 private:
  std::filesystem::path path_;
};

}  // namespace detkit::testing

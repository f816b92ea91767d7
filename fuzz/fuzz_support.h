#pragma once
// What every harness shares. A harness feeds its bytes to one parser of untrusted input; the
// parser may refuse them only with a detkit::Error (its named message). Any other exception, a
// crash, a hang, a leak or a sanitizer report is a finding. The same entry point runs under
// libFuzzer (clang, -fsanitize=fuzzer,address,undefined) and in the ordinary build's replay of
// the corpus and regression inputs (replay_main.cpp).
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "detkit/utils/error.h"

namespace detkit::fuzz {

// The parsers' warnings (dropped annotations, ...) would be most of the time spent: off.
inline const bool kQuiet = (spdlog::set_level(spdlog::level::off), true);

/// A folder of this process's own under the temp folder, for parsers that read files.
inline const std::filesystem::path& scratch_dir() {
  static const std::filesystem::path dir = [] {
    auto d = std::filesystem::temp_directory_path() / ("detkit_fuzz_" + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    return d;
  }();
  return dir;
}

/// Writes `size` bytes to scratch_dir()/name and returns the path.
inline std::string write_scratch(const std::string& name, const uint8_t* data, size_t size) {
  const std::string path = (scratch_dir() / name).string();
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  return path;
}

/// Runs `parse`; a detkit::Error is the parser refusing the input, which is fine.
template <class F>
void refuse_only_with_named_errors(F&& parse) {
  try {
    parse();
  } catch (const detkit::Error&) {
  }
}

}  // namespace detkit::fuzz

#pragma once
// File helpers that never leave a half-written file behind.
#include <string>

namespace detkit {

/// Reads a whole file; throws detkit::Error naming the path when it cannot.
std::string read_file(const std::string& path);

/// Writes `content` to a temporary file beside `path`, flushes it to disk and renames it over
/// `path`. Readers see either the old file or the complete new one.
void atomic_write(const std::string& path, const std::string& content);

}  // namespace detkit

#pragma once
// File helpers that never leave a half-written file behind.
#include <string>

namespace detkit {

/// Reads a whole file; throws detkit::Error naming the path when it cannot.
std::string read_file(const std::string& path);

/// Writes `content` to a temporary file beside `path`, flushes it to disk and renames it over
/// `path`. Readers see either the old file or the complete new one; a failure (a full disk, a
/// file-size limit, an unwritable folder) is a detkit::Error naming `path` and the errno, and
/// leaves no temporary file behind.
void atomic_write(const std::string& path, const std::string& content);

/// Appends `content` to `path` (created when missing) as a whole: when a write fails part way
/// the file is cut back to its old length, so that a line-per-record file (metrics.json) never
/// ends in half a record. The error names `path` and the errno.
void append_whole(const std::string& path, const std::string& content);

}  // namespace detkit

#pragma once
// Downloading one file over HTTP(S) with libcurl, never leaving a half-written file where a
// complete one is expected: the bytes go to DESTINATION.part, a broken transfer is resumed (HTTP
// Range) or restarted, and the file is renamed into place only when its size is the one the
// server announced.
#include <cstdint>
#include <string>

namespace detkit::checkpoint {

struct DownloadOptions {
  int attempts = 3;             // transfers tried (each resumes where the last one broke)
  long connect_timeout_s = 30;  // per connection
  long stall_timeout_s = 60;    // below 1 KiB/s for this long: a broken transfer
};

/// Downloads `url` to `destination` (its folder created). Throws detkit::Error naming the URL
/// and why: an HTTP status other than 200/206, a refused or unresolvable host, a transfer that
/// stayed short after every attempt ("received N of M bytes"). `expected_size` (out, may be
/// null) receives the size the server announced, or -1 when it said none — also when throwing.
void download_file(const std::string& url, const std::string& destination,
                   const DownloadOptions& options = {}, int64_t* expected_size = nullptr);

}  // namespace detkit::checkpoint

#include "detkit/checkpoint/download.h"

#include <curl/curl.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <mutex>

#include "detkit/utils/error.h"

namespace detkit::checkpoint {
namespace {

namespace fs = std::filesystem;

struct Transfer {
  CURL* curl;
  FILE* file;
  bool write_failed = false;
};

// The body of a 200/206 answer goes to the file; an error page is dropped.
size_t write_body(char* data, size_t size, size_t count, void* user) {
  auto* transfer = static_cast<Transfer*>(user);
  long status = 0;
  curl_easy_getinfo(transfer->curl, CURLINFO_RESPONSE_CODE, &status);
  if (status != 200 && status != 206) return size * count;
  const size_t written = std::fwrite(data, 1, size * count, transfer->file);
  if (written != size * count) transfer->write_failed = true;
  return written;
}

int64_t file_size(const std::string& path) {
  std::error_code error;
  const auto size = fs::file_size(path, error);
  return error ? 0 : static_cast<int64_t>(size);
}

// Failures a second attempt cannot mend.
bool permanent(CURLcode code) {
  return code == CURLE_COULDNT_CONNECT || code == CURLE_COULDNT_RESOLVE_HOST ||
         code == CURLE_COULDNT_RESOLVE_PROXY || code == CURLE_UNSUPPORTED_PROTOCOL ||
         code == CURLE_URL_MALFORMAT || code == CURLE_TOO_MANY_REDIRECTS ||
         code == CURLE_PEER_FAILED_VERIFICATION;
}

std::string bytes_text(int64_t n) { return std::to_string(n) + " bytes"; }

}  // namespace

void download_file(const std::string& url, const std::string& destination,
                   const DownloadOptions& options, int64_t* expected_size) {
  static std::once_flag curl_ready;
  std::call_once(curl_ready, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  if (expected_size) *expected_size = -1;
  std::error_code error;
  fs::create_directories(fs::path(destination).parent_path(), error);
  if (error)
    throw Error("cannot create '" + fs::path(destination).parent_path().string() +
                "': " + error.message());
  const std::string part = destination + ".part";
  int64_t total = -1;
  std::string last_error;
  for (int attempt = 1; attempt <= options.attempts; ++attempt) {
    const int64_t offset = file_size(part);
    FILE* file = std::fopen(part.c_str(), "ab");
    if (file == nullptr) throw Error("cannot write '" + part + "'");
    CURL* curl = curl_easy_init();
    Transfer transfer{curl, file};
    char message[CURL_ERROR_SIZE] = "";
    curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
    curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(curl, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(curl, CURLOPT_MAXREDIRS, 5L);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_USERAGENT, "detkit");
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, options.connect_timeout_s);
    curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1024L);
    curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, options.stall_timeout_s);
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, message);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, write_body);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &transfer);
    if (offset > 0) curl_easy_setopt(curl, CURLOPT_RESUME_FROM_LARGE, curl_off_t{offset});
    const CURLcode code = curl_easy_perform(curl);
    long status = 0;
    curl_off_t length = -1;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_getinfo(curl, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length);
    curl_easy_cleanup(curl);
    const bool flushed = std::fflush(file) == 0 && ::fsync(fileno(file)) == 0;
    std::fclose(file);
    if (transfer.write_failed || !flushed) {
      fs::remove(part, error);
      throw Error("cannot write '" + part + "' while downloading '" + url +
                  "' (is the disk full?)");
    }
    if ((status == 200 || status == 206) && length >= 0) {
      total = (status == 206 ? offset : 0) + static_cast<int64_t>(length);
      if (expected_size) *expected_size = total;
    }
    if (code == CURLE_RANGE_ERROR || (status == 416 && offset > 0)) {  // cannot resume: restart
      fs::remove(part, error);
      last_error = "the server cannot resume a transfer";
      continue;
    }
    if (code == CURLE_OK && status != 200 && status != 206) {
      if (file_size(part) == 0) fs::remove(part, error);
      throw Error("cannot download '" + url + "': HTTP status " + std::to_string(status));
    }
    const int64_t have = file_size(part);
    if (code == CURLE_OK && (total < 0 || have == total)) {
      fs::rename(part, destination, error);
      if (error)
        throw Error("cannot rename '" + part + "' to '" + destination + "': " + error.message());
      return;
    }
    const std::string reason = code != CURLE_OK ? (*message ? message : curl_easy_strerror(code))
                                                : "the transfer ended early";
    last_error =
        reason + "; received " + bytes_text(have) + (total >= 0 ? " of " + bytes_text(total) : "");
    if (permanent(code)) throw Error("cannot download '" + url + "': " + reason);
    if (attempt < options.attempts)
      spdlog::warn("Downloading {}: {}; resuming (attempt {} of {})", url, last_error, attempt + 1,
                   options.attempts);
  }
  throw Error("cannot download '" + url + "': " + last_error + " after " +
              std::to_string(options.attempts) + " attempts");
}

}  // namespace detkit::checkpoint

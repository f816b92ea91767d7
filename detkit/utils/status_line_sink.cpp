#include "detkit/utils/status_line_sink.h"

#include <sys/ioctl.h>
#include <unistd.h>

namespace detkit {
namespace {
constexpr const char* kEraseLine = "\r\033[K";  // to the line's start, then clear it

// The terminal's width, 80 when `out` is not one.
size_t columns_of(FILE* out) {
  winsize size{};
  if (ioctl(fileno(out), TIOCGWINSZ, &size) == 0 && size.ws_col > 0) return size.ws_col;
  return 80;
}
}  // namespace

StatusLineSink::StatusLineSink(FILE* out)
    : out_(out), inner_(out, spdlog::color_mode::automatic) {}

void StatusLineSink::log(const spdlog::details::log_msg& msg) {
  std::lock_guard<std::mutex> lock(mutex_);
  erase_status();
  inner_.log(msg);
  inner_.flush();
  draw_status();
}

void StatusLineSink::flush() {
  std::lock_guard<std::mutex> lock(mutex_);
  inner_.flush();
}

void StatusLineSink::set_pattern(const std::string& pattern) {
  std::lock_guard<std::mutex> lock(mutex_);
  inner_.set_pattern(pattern);
}

void StatusLineSink::set_formatter(std::unique_ptr<spdlog::formatter> formatter) {
  std::lock_guard<std::mutex> lock(mutex_);
  inner_.set_formatter(std::move(formatter));
}

void StatusLineSink::set_status(const std::string& text) {
  std::lock_guard<std::mutex> lock(mutex_);
  erase_status();
  // One character short of the width: a full line would wrap, and \r returns to its last row.
  status_ = text.substr(0, columns_of(out_) - 1);
  draw_status();
}

void StatusLineSink::erase_status() {
  if (status_.empty()) return;
  std::fputs(kEraseLine, out_);
}

void StatusLineSink::draw_status() {
  if (status_.empty()) return;
  std::fputs(status_.c_str(), out_);
  std::fflush(out_);
}

}  // namespace detkit

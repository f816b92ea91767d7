#pragma once
// The console sink of detkit's log when the console is a terminal: besides the log lines it can
// show one status line (a progress bar's text), rewritten in place; a log line printed while the
// status line shows goes above it, and the status line is drawn again below.
#include <spdlog/details/console_globals.h>
#include <spdlog/sinks/ansicolor_sink.h>

#include <cstdio>
#include <mutex>
#include <string>

namespace detkit {

class StatusLineSink final : public spdlog::sinks::sink {
 public:
  /// Writes to `out` (stderr), in colour where `out` is a terminal.
  explicit StatusLineSink(FILE* out);
  void log(const spdlog::details::log_msg& msg) override;
  void flush() override;
  void set_pattern(const std::string& pattern) override;
  void set_formatter(std::unique_ptr<spdlog::formatter> formatter) override;
  /// Shows `text` (cut to the terminal's width) in place of the current status line; "" clears it.
  void set_status(const std::string& text);

 private:
  void erase_status();  // with mutex_ held
  void draw_status();   // with mutex_ held

  std::mutex mutex_;
  FILE* out_;
  spdlog::sinks::ansicolor_sink<spdlog::details::console_nullmutex> inner_;
  std::string status_;
};

}  // namespace detkit

#include "detkit/utils/logging.h"

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <memory>

#include "detkit/utils/error.h"
#include "detkit/utils/status_line_sink.h"

namespace detkit {
namespace {
constexpr const char* kPattern = "[%m/%d %H:%M:%S %n]: %^%v%$";

// What setup_logging installed last.
struct Installed {
  std::shared_ptr<StatusLineSink> console;   // when it shows info lines on a terminal
  std::shared_ptr<spdlog::logger> file_only;  // the log file's sink alone
};
Installed& installed() {
  static Installed state;
  return state;
}

bool stderr_is_terminal() {
  const char* term = std::getenv("TERM");
  return isatty(fileno(stderr)) == 1 && !(term != nullptr && std::strcmp(term, "dumb") == 0);
}
}  // namespace

void setup_logging(const std::string& file, bool console_info) {
  auto console = std::make_shared<StatusLineSink>(stderr);
  if (!console_info) console->set_level(spdlog::level::warn);
  std::vector<spdlog::sink_ptr> sinks{console};
  std::shared_ptr<spdlog::logger> file_only;
  if (!file.empty()) {
    try {
      sinks.push_back(std::make_shared<spdlog::sinks::basic_file_sink_mt>(file));
    } catch (const spdlog::spdlog_ex& e) {
      throw Error("cannot open log file '" + file + "': " + e.what());
    }
    file_only = std::make_shared<spdlog::logger>("detkit", sinks.back());
    file_only->set_pattern(kPattern);
    file_only->flush_on(spdlog::level::info);
  }
  auto logger = std::make_shared<spdlog::logger>("detkit", sinks.begin(), sinks.end());
  logger->set_pattern(kPattern);
  logger->flush_on(spdlog::level::info);  // log.txt stays complete even if the process is killed
  spdlog::set_default_logger(logger);
  set_status_line("");  // a status line of the previous console, if any, is cleared
  installed() = {console_info && stderr_is_terminal() ? console : nullptr, file_only};
}

bool console_has_status_line() { return installed().console != nullptr; }

void set_status_line(const std::string& text) {
  if (installed().console) installed().console->set_status(text);
}

void log_to_file_only(const std::string& text) {
  if (installed().file_only) installed().file_only->info(text);
}

}  // namespace detkit

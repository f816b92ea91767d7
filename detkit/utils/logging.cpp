#include "detkit/utils/logging.h"

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "detkit/utils/error.h"

namespace detkit {

void setup_logging(const std::string& file, bool console_info) {
  std::vector<spdlog::sink_ptr> sinks{std::make_shared<spdlog::sinks::stderr_color_sink_mt>()};
  if (!console_info) sinks.front()->set_level(spdlog::level::warn);
  if (!file.empty()) {
    try {
      sinks.push_back(std::make_shared<spdlog::sinks::basic_file_sink_mt>(file));
    } catch (const spdlog::spdlog_ex& e) {
      throw Error("cannot open log file '" + file + "': " + e.what());
    }
  }
  auto logger = std::make_shared<spdlog::logger>("detkit", sinks.begin(), sinks.end());
  logger->set_pattern("[%m/%d %H:%M:%S %n]: %^%v%$");
  logger->flush_on(spdlog::level::info);  // log.txt stays complete even if the process is killed
  spdlog::set_default_logger(logger);
}

}  // namespace detkit

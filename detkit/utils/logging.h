#pragma once
// detkit's log: spdlog's default logger, on stderr so that stdout stays for results (YAML of
// `detkit config`, JSON of `detkit evaluate --json`), with Detectron2's line prefix.
#include <string>

namespace detkit {

/// Installs the stderr logger (idempotent); also writes to `file` when given (log.txt). With
/// `console_info` false the console shows warnings and errors only (ranks other than 0, as
/// Detectron2's setup_logger gives them no console handler; their file still has everything).
void setup_logging(const std::string& file = "", bool console_info = true);

}  // namespace detkit

#pragma once
// detkit's log: spdlog's default logger, on stderr so that stdout stays for results (YAML of
// `detkit config`, JSON of `detkit evaluate --json`), with Detectron2's line prefix.
#include <string>

namespace detkit {

/// Installs the stderr logger (idempotent); also writes to `file` when given (log.txt).
void setup_logging(const std::string& file = "");

}  // namespace detkit

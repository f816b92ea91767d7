#pragma once
// detkit's log: spdlog's default logger, on stderr so that stdout stays for results (YAML of
// `detkit config`, JSON of `detkit evaluate --json`), with Detectron2's line prefix. When stderr
// is a terminal, long operations show their progress on one status line rewritten in place
// (utils/progress.h), and their periodic progress lines go to the log file only.
#include <string>

namespace detkit {

/// Installs the stderr logger (idempotent); also writes to `file` when given (log.txt). With
/// `console_info` false the console shows warnings and errors only (ranks other than 0, as
/// Detectron2's setup_logging gives them no console handler; their file still has everything).
void setup_logging(const std::string& file = "", bool console_info = true);

/// Whether progress goes to a status line: setup_logging installed the logger with
/// `console_info`, stderr is a terminal, and TERM is not "dumb".
bool console_has_status_line();
/// Shows `text` as the console's status line ("" clears it); nothing without one.
void set_status_line(const std::string& text);
/// Logs `text` at info level to the log file of setup_logging only (nothing without one).
void log_to_file_only(const std::string& text);

}  // namespace detkit

#pragma once
// Runs a program as a child process and measures it the same way whatever it is: wall time from
// fork to exit, CPU time and peak resident memory (ru_utime + ru_stime, ru_maxrss from wait4).
#include <string>
#include <vector>

namespace detkit::bench {

struct ChildResult {
  int exit_code = -1;      // the exit status, or 128 + signal number
  double seconds = 0;      // wall time, fork to exit
  double cpu_seconds = 0;  // user + system CPU time
  double peak_rss_mb = 0;  // maximum resident set size, MiB
  std::string output;      // what it wrote to stdout
};

/// Runs argv[0] (a path) with arguments argv[1...]; throws detkit::Error when it cannot start.
ChildResult run_child(const std::vector<std::string>& argv);

}  // namespace detkit::bench

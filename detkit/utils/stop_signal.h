#pragma once
// SIGTERM and SIGINT during training: a scheduler's preemption (SLURM sends SIGTERM before the
// kill, or the signal sbatch's --signal names), a user's Ctrl-C. The first asks training to stop
// after the current step, with a checkpoint (engine::PreemptionHook); a second exits at once,
// removing the temporary file an atomic_write has open, so that the previous checkpoint and
// last_checkpoint stay what they were.
#include <string>

#include "detkit/utils/error.h"

namespace detkit {

/// The exit status of a run that stopped on a signal after saving its checkpoint (sysexits'
/// EX_TEMPFAIL: a temporary failure; the same command with --resume continues it).
inline constexpr int kPreemptedExitCode = 75;

/// Training stopped on a signal after saving its checkpoint; the CLI exits kPreemptedExitCode.
class Preempted : public Error {
 public:
  using Error::Error;
};

/// While one is alive, SIGTERM and SIGINT are caught. The first is remembered (stop_requested()).
/// A later one exits the process at once with status 128 + signal — unless it comes within a
/// second of the first: that is the same request arriving twice (a launcher passing on what the
/// scheduler or the terminal already sent its whole process group). Destroying it puts the
/// previous handlers back and forgets the request.
class StopSignalGuard {
 public:
  StopSignalGuard();
  ~StopSignalGuard();
  StopSignalGuard(const StopSignalGuard&) = delete;
  StopSignalGuard& operator=(const StopSignalGuard&) = delete;
};

/// The signal that asked this process to stop (SIGTERM, SIGINT), or 0.
int stop_requested();

/// "SIGTERM" for SIGTERM; "signal N" for a number without a name.
std::string signal_name(int sig);

/// Writes that fail on a full disk or a file-size limit (`ulimit -f`) return EFBIG instead of
/// killing the process with SIGXFSZ, so that they end in an error naming the file.
void ignore_file_size_signal();

namespace internal {
/// The temporary file atomic_write is writing ("" when none): a second signal removes it.
void set_temporary_in_progress(const std::string& path);
}  // namespace internal

}  // namespace detkit

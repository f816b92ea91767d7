#include "detkit/utils/stop_signal.h"

#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

namespace detkit {

namespace {
volatile sig_atomic_t g_requested = 0;
std::atomic<int64_t> g_first_ns{0};  // when the first signal came (CLOCK_MONOTONIC)
// The path of the temporary file being written, for the handler (no allocation there).
char g_temporary[4096] = {};
std::atomic<bool> g_temporary_set{false};

int64_t monotonic_ns() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);  // async-signal-safe
  return static_cast<int64_t>(t.tv_sec) * 1000000000 + t.tv_nsec;
}

void on_stop_signal(int sig) {
  const int64_t now = monotonic_ns();
  if (g_requested == 0) {
    g_requested = sig;
    g_first_ns = now;
    const char note[] =
        "detkit: stop requested; finishing this step and saving a checkpoint "
        "(a second signal stops at once)\n";
    ssize_t ignored = write(STDERR_FILENO, note, sizeof(note) - 1);
    (void)ignored;
    return;
  }
  if (now - g_first_ns < 1000000000) return;  // the same request, passed on by a launcher
  if (g_temporary_set) unlink(g_temporary);
  _exit(128 + sig);
}

struct sigaction g_old_term {
}, g_old_int{};
}  // namespace

StopSignalGuard::StopSignalGuard() {
  g_requested = 0;
  struct sigaction on_signal {};
  on_signal.sa_handler = on_stop_signal;
  sigemptyset(&on_signal.sa_mask);
  on_signal.sa_flags = SA_RESTART;  // reads and writes in flight carry on
  sigaction(SIGTERM, &on_signal, &g_old_term);
  sigaction(SIGINT, &on_signal, &g_old_int);
}

StopSignalGuard::~StopSignalGuard() {
  sigaction(SIGTERM, &g_old_term, nullptr);
  sigaction(SIGINT, &g_old_int, nullptr);
  g_requested = 0;
}

int stop_requested() { return g_requested; }

std::string signal_name(int sig) {
  const char* name = sigabbrev_np(sig);
  return name ? std::string("SIG") + name : "signal " + std::to_string(sig);
}

void ignore_file_size_signal() { signal(SIGXFSZ, SIG_IGN); }

namespace internal {
void set_temporary_in_progress(const std::string& path) {
  g_temporary_set = false;
  if (path.empty() || path.size() >= sizeof(g_temporary)) return;
  std::memcpy(g_temporary, path.c_str(), path.size() + 1);
  g_temporary_set = true;
}
}  // namespace internal

}  // namespace detkit

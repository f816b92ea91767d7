#include "detkit/utils/threads.h"

#include <ATen/Parallel.h>

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "detkit/utils/error.h"

namespace detkit {

int configure_threads(int requested) {
  int n = requested;
  if (n <= 0) {
    if (const char* env = std::getenv("DETKIT_NUM_THREADS"); env && *env) {
      try {
        n = std::stoi(env);
      } catch (const std::exception&) {
        throw Error(std::string("DETKIT_NUM_THREADS must be a positive integer, got '") + env + "'");
      }
      if (n <= 0) throw Error(std::string("DETKIT_NUM_THREADS must be positive, got '") + env + "'");
    }
  }
  if (n <= 0) n = static_cast<int>(std::thread::hardware_concurrency());
  if (n <= 0) n = 1;
  at::set_num_threads(n);
  return n;
}

void use_one_thread_for_ops_in_this_thread() {
  // libtorch's OpenMP build sizes a thread's teams by that thread's OpenMP setting, which it
  // sets from its global count on the thread's first parallel op: done first here, so that it
  // does not undo the setting below. Twice: PyPI's libtorch_cpu.so keeps its own copy of the
  // inline lazy_init_num_threads' once-per-thread flag (not exported), apart from detkit's, so
  // its first op in this thread would set the count again; at::get_num_threads runs its copy.
  // omp_set_num_threads is per thread; found at run time (a libtorch without OpenMP has no teams
  // to size).
  at::internal::lazy_init_num_threads();
  at::get_num_threads();
  using SetThreads = void (*)(int);
  if (auto set = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "omp_set_num_threads"))) set(1);
}

int parallel_for_threads(int64_t n) {
  std::mutex mutex;
  std::set<std::thread::id> ids;
  at::parallel_for(0, n, 1, [&](int64_t, int64_t) {
    std::lock_guard<std::mutex> lock(mutex);
    ids.insert(std::this_thread::get_id());
  });
  return static_cast<int>(ids.size());
}

}  // namespace detkit

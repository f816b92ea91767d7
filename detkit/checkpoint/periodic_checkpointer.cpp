#include "detkit/checkpoint/periodic_checkpointer.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <vector>

#include "detkit/utils/error.h"

namespace detkit::checkpoint {

PeriodicCheckpointer::PeriodicCheckpointer(Checkpointer& checkpointer, int64_t period,
                                           int64_t max_iter, int64_t max_to_keep,
                                           std::string file_prefix)
    : checkpointer_(checkpointer),
      period_(period),
      max_iter_(max_iter),
      max_to_keep_(max_to_keep),
      prefix_(std::move(file_prefix)) {
  if (period_ <= 0)
    throw Error("checkpoint period must be positive, got " + std::to_string(period_));
}

void PeriodicCheckpointer::step(int64_t iteration, CheckpointState state) {
  state["iteration"] = iteration;
  if ((iteration + 1) % period_ == 0) {
    checkpointer_.save(fmt::format("{}_{:07d}", prefix_, iteration), state);
    remove_stale();
  }
  if (iteration >= max_iter_ - 1) checkpointer_.save(prefix_ + "_final", state);
}

int64_t PeriodicCheckpointer::periodic_iteration(const std::string& file) const {
  const std::string head = prefix_ + "_", tail = ".pth";
  if (file.size() < head.size() + 7 + tail.size() || file.size() > head.size() + 18 + tail.size())
    return -1;
  if (file.compare(0, head.size(), head) != 0 ||
      file.compare(file.size() - tail.size(), tail.size(), tail) != 0)
    return -1;
  const std::string digits = file.substr(head.size(), file.size() - head.size() - tail.size());
  for (char c : digits)
    if (!std::isdigit(static_cast<unsigned char>(c))) return -1;
  return std::stoll(digits);
}

void PeriodicCheckpointer::remove_stale() const {
  namespace fs = std::filesystem;
  if (max_to_keep_ <= 0 || !checkpointer_.save_to_disk()) return;
  std::vector<std::pair<int64_t, fs::path>> files;
  for (const auto& entry : fs::directory_iterator(checkpointer_.output_dir())) {
    const int64_t iteration = periodic_iteration(entry.path().filename().string());
    if (iteration >= 0 && entry.is_regular_file()) files.emplace_back(iteration, entry.path());
  }
  if (static_cast<int64_t>(files.size()) <= max_to_keep_) return;
  std::sort(files.begin(), files.end());
  const fs::path keep = checkpointer_.last_checkpoint();
  for (size_t i = 0; i + max_to_keep_ < files.size(); ++i) {
    std::error_code error;
    if (fs::equivalent(files[i].second, keep, error)) continue;
    fs::remove(files[i].second, error);
    if (error)
      spdlog::warn("cannot remove old checkpoint {}: {}", files[i].second.string(),
                   error.message());
  }
}

}  // namespace detkit::checkpoint

#pragma once
// Detectron2's PeriodicCheckpointer: model_{iteration:07d}.pth every `period` iterations,
// model_final.pth at the last one, and only the newest `max_to_keep` periodic files kept.
#include <string>

#include "detkit/checkpoint/checkpointer.h"

namespace detkit::checkpoint {

class PeriodicCheckpointer {
 public:
  /// max_to_keep <= 0 keeps every periodic file.
  PeriodicCheckpointer(Checkpointer& checkpointer, int64_t period, int64_t max_iter,
                       int64_t max_to_keep = 0, std::string file_prefix = "model");

  /// Call after iteration `iteration` (0-based) finished: saves <prefix>_{iteration:07d} when
  /// (iteration + 1) % period == 0 and <prefix>_final when iteration >= max_iter - 1, each with
  /// `state` plus "iteration". Then removes stale periodic files.
  void step(int64_t iteration, CheckpointState state = {});

  /// Deletes <prefix>_NNNNNNN.pth files in the output folder beyond the newest max_to_keep (by
  /// iteration), never the file last_checkpoint names, never <prefix>_final.pth.
  void remove_stale() const;

 private:
  // N for "<prefix>_NNNNNNN.pth" (7 to 18 digits); -1 for any other name.
  int64_t periodic_iteration(const std::string& file) const;

  Checkpointer& checkpointer_;
  int64_t period_, max_iter_, max_to_keep_;
  std::string prefix_;
};

}  // namespace detkit::checkpoint

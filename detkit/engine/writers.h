#pragma once
// The writers of Detectron2's DefaultTrainer: what the trainer's EventStorage (event_storage.h)
// holds goes to the console (CommonMetricPrinter) and to metrics.json (JSONWriter).
#include <cstdint>
#include <map>
#include <string>

#include "detkit/engine/trainer.h"

namespace detkit::engine {

/// Every `period` iterations and at the last: a console line (Detectron2's CommonMetricPrinter:
/// eta, iter, losses, time, data_time, lr, peak memory) and new lines of metrics.json (one JSON
/// object per iteration, keys sorted, as Detectron2's JSONWriter).
class PeriodicWriter : public HookBase {
 public:
  PeriodicWriter(std::string metrics_json, int64_t period = 20);
  void after_step(Trainer& t) override;
  void after_train(Trainer& t) override;

 private:
  void write(Trainer& t);
  void append_lines(const std::map<int64_t, std::map<std::string, double>>& values);
  std::string metrics_json_;
  int64_t period_;
  std::map<std::string, int64_t> written_;  // per metric, the iteration last written
  int64_t last_written_ = -1;
};

/// What a writer has not written yet: each metric of `storage` (smoothed over 20 values where it
/// has the smoothing hint, as Detectron2's writers) whose latest value is newer than the one
/// `written` records for it, by iteration; `written` is updated. Per metric, so that values
/// recorded late at an iteration already written (the final evaluation's AP) still go out.
std::map<int64_t, std::map<std::string, double>> unwritten_scalars(
    const EventStorage& storage, std::map<std::string, int64_t>& written);

/// Peak resident memory of this process in MB.
double peak_rss_mb();

/// Seconds as H:MM:SS (the console line's eta), negative as 0:00:00.
std::string hms(double seconds);

}  // namespace detkit::engine

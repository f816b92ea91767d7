#include "detkit/engine/writers.h"

#include <spdlog/spdlog.h>
#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>

#include "detkit/utils/file_io.h"

namespace detkit::engine {

double peak_rss_mb() {
  struct rusage usage {};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss / 1024.0;  // kilobytes on Linux
}

std::string hms(double seconds) {
  long s = std::lround(std::max(0.0, seconds));
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%ld:%02ld:%02ld", s / 3600, (s / 60) % 60, s % 60);
  return buf;
}

std::map<int64_t, std::map<std::string, double>> unwritten_scalars(
    const EventStorage& storage, std::map<std::string, int64_t>& written) {
  std::map<int64_t, std::map<std::string, double>> out;
  for (const auto& [name, value] : storage.latest_with_smoothing_hint(20)) {
    auto it = written.find(name);
    if (it != written.end() && value.second <= it->second) continue;
    out[value.second][name] = value.first;
    written[name] = value.second;
  }
  return out;
}

PeriodicWriter::PeriodicWriter(std::string metrics_json, int64_t period)
    : metrics_json_(std::move(metrics_json)), period_(period) {}

void PeriodicWriter::after_step(Trainer& t) {
  if ((t.iter() + 1) % period_ == 0 || t.iter() == t.max_iter() - 1) write(t);
}

void PeriodicWriter::after_train(Trainer& t) {
  if (last_written_ < t.iter()) {
    write(t);
    return;
  }
  // Values recorded after the last write at its iteration (the final evaluation): no console
  // line, only metrics.json.
  append_lines(unwritten_scalars(t.storage(), written_));
}

void PeriodicWriter::write(Trainer& t) {
  EventStorage& s = t.storage();
  const size_t window = 20;
  const int64_t iter = t.iter();
  double eta = s.has("time") ? s.median("time", 1000) * (t.max_iter() - iter - 1) : 0.0;
  if (s.has("time")) s.put_scalar("eta_seconds", eta, /*smoothing_hint=*/false);

  std::string losses;
  for (const auto& name : s.names())
    if (name.find("loss") != std::string::npos)
      losses += fmt::format("{}: {:.4g}  ", name, s.median(name, window));
  std::string times;
  if (s.has("time"))
    times += fmt::format("time: {:.4f}  last_time: {:.4f}  ", s.average("time", window),
                         s.latest("time").first);
  if (s.has("data_time"))
    times += fmt::format("data_time: {:.4f}  last_data_time: {:.4f}  ",
                         s.median("data_time", window), s.latest("data_time").first);
  std::string lr = s.has("lr") ? fmt::format("lr: {:.5g}  ", s.latest("lr").first) : "";
  spdlog::info(" eta: {}  iter: {}  {}{}{}max_mem: {:.0f}M", hms(eta), iter, losses, times, lr,
               peak_rss_mb());

  append_lines(unwritten_scalars(s, written_));
  last_written_ = std::max(last_written_, iter);
}

void PeriodicWriter::append_lines(const std::map<int64_t, std::map<std::string, double>>& values) {
  // metrics.json: one line per iteration that has new values, keys sorted.
  if (values.empty()) return;
  std::string text;
  for (const auto& [it, scalars] : values) {
    nlohmann::json line(scalars);
    line["iteration"] = it;
    text += line.dump() + "\n";  // nlohmann::json objects keep their keys sorted
  }
  append_whole(metrics_json_, text);  // a failed write leaves no half line
}

}  // namespace detkit::engine

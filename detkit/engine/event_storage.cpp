#include "detkit/engine/event_storage.h"

#include <algorithm>

#include "detkit/utils/error.h"

namespace detkit::engine {

void EventStorage::put_scalar(const std::string& name, double value, bool smoothing_hint) {
  History& h = history_[name];
  if (!h.values.empty() && h.smoothing_hint != smoothing_hint)
    throw Error("metric '" + name + "' was put with a different smoothing hint before");
  h.smoothing_hint = smoothing_hint;
  h.values.emplace_back(value, iter_);
}

const EventStorage::History& EventStorage::history(const std::string& name) const {
  auto it = history_.find(name);
  if (it == history_.end() || it->second.values.empty())
    throw Error("no metric named '" + name + "' has been recorded");
  return it->second;
}

std::pair<double, int64_t> EventStorage::latest(const std::string& name) const {
  return history(name).values.back();
}

namespace {
std::vector<double> last_values(const std::vector<std::pair<double, int64_t>>& all, size_t window) {
  size_t n = std::min(window, all.size());
  std::vector<double> out;
  for (size_t i = all.size() - n; i < all.size(); ++i) out.push_back(all[i].first);
  return out;
}
}  // namespace

double EventStorage::median(const std::string& name, size_t window) const {
  std::vector<double> v = last_values(history(name).values, window);
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);  // numpy's median
}

double EventStorage::average(const std::string& name, size_t window) const {
  std::vector<double> v = last_values(history(name).values, window);
  double sum = 0;
  for (double x : v) sum += x;
  return sum / v.size();
}

std::map<std::string, std::pair<double, int64_t>> EventStorage::latest_with_smoothing_hint(
    size_t window) const {
  std::map<std::string, std::pair<double, int64_t>> out;
  for (const auto& [name, h] : history_) {
    if (h.values.empty()) continue;
    int64_t it = h.values.back().second;
    out[name] = {h.smoothing_hint ? median(name, window) : h.values.back().first, it};
  }
  return out;
}

std::vector<std::string> EventStorage::names() const {
  std::vector<std::string> out;
  for (const auto& [name, h] : history_) out.push_back(name);
  return out;
}

}  // namespace detkit::engine

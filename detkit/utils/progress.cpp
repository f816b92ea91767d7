#include "detkit/utils/progress.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cmath>

#include "detkit/utils/logging.h"

namespace detkit {
namespace {
// 448.6 as "448.6", 120 as "120": counts print as integers.
std::string amount(double x) {
  return x == std::floor(x) ? fmt::format("{:.0f}", x) : fmt::format("{:.1f}", x);
}
}  // namespace

std::string format_eta(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const auto s = static_cast<int64_t>(seconds);
  return fmt::format("{}:{:02d}:{:02d}", s / 3600, static_cast<int>(s / 60 % 60),
                     static_cast<int>(s % 60));
}

Progress::Progress(std::string what, double total, std::string unit, ProgressOptions options)
    : what_(std::move(what)),
      unit_(std::move(unit)),
      total_(total),
      options_(std::move(options)),
      status_line_(console_has_status_line()) {
  start_ = last_log_ = last_draw_ = now();
}

Progress::~Progress() {
  if (drawn_) set_status_line("");
}

double Progress::now() const {
  if (options_.clock) return options_.clock();
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string Progress::line(double done) const {
  const double elapsed = now() - start_;
  const double rate = elapsed > 0 ? done / elapsed : 0;
  const double percent = total_ > 0 ? 100.0 * done / total_ : 100.0;
  return fmt::format("{}: {}/{} {} ({:.0f}%), {:.3g} {}/s, ETA {}", what_, amount(done),
                     amount(total_), unit_, percent, rate, unit_,
                     format_eta(rate > 0 ? (total_ - done) / rate : NAN));
}

void Progress::update(double done) {
  update(done, [&] { return line(done); });
}

void Progress::update(double done, const std::function<std::string()>& text) {
  std::unique_lock<std::mutex> lock(mutex_, std::try_to_lock);
  if (!lock.owns_lock()) return;
  const double t = now();
  const bool log_due = t - last_log_ >= options_.log_period;
  const bool draw_due = status_line_ && t - last_draw_ >= options_.redraw_period;
  if (!log_due && !draw_due) return;
  const std::string message = text();
  if (draw_due) {
    set_status_line(message);
    drawn_ = true;
    last_draw_ = t;
  }
  if (log_due) {
    if (status_line_)
      log_to_file_only(message);
    else
      spdlog::info(message);
    ++lines_logged_;
    last_log_ = t;
  }
}

}  // namespace detkit

#pragma once
// Progress of an operation a person waits for (loading a dataset JSON, inference over a dataset,
// COCOeval, `detkit data check`, generating the shapes dataset): how much is done, the rate and
// the ETA, at a steady pace. On a terminal (logging.h's status line) the line is rewritten in
// place at most 5 times a second and the log file gets a line every 5 s; otherwise the log gets a
// line every 5 s. An operation shorter than that prints nothing of it.
//
//   Progress progress("Loading instances_train2017.json", 448.6, "MB");
//   ... progress.update(120.5);  // "Loading instances_train2017.json: 120.5/448.6 MB (27%),
//                                //  45.1 MB/s, ETA 0:00:07"
#include <functional>
#include <mutex>
#include <string>

namespace detkit {

struct ProgressOptions {
  double log_period = 5.0;     // seconds between lines in the log
  double redraw_period = 0.2;  // seconds between redraws of a terminal's status line
  std::function<double()> clock;  // seconds; a steady clock when empty (tests give their own)
};

class Progress {
 public:
  /// `total` units of work (images, categories, MB) called `unit`, for an operation named `what`.
  Progress(std::string what, double total, std::string unit, ProgressOptions options = {});
  /// Clears the status line it showed.
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  /// `done` units are done: shows or logs line(done) when one is due. Any thread may call it; a
  /// call while another thread is inside returns at once.
  void update(double done);
  /// The same with the caller's own text (Detectron2's "Inference done 11/50. ..." line).
  void update(double done, const std::function<std::string()>& text);
  /// "<what>: <done>/<total> <unit> (<p>%), <rate> <unit>/s, ETA h:mm:ss", rate and ETA from the
  /// average since the start.
  std::string line(double done) const;
  /// How many lines the log got so far (tests).
  int lines_logged() const { return lines_logged_; }

 private:
  double now() const;

  std::string what_, unit_;
  double total_;
  ProgressOptions options_;
  bool status_line_;
  double start_, last_log_, last_draw_;
  bool drawn_ = false;
  int lines_logged_ = 0;
  std::mutex mutex_;
};

/// Seconds as Detectron2 writes an ETA (Python's timedelta without fractions): "0:02:13".
std::string format_eta(double seconds);

}  // namespace detkit

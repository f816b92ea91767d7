// Progress: its line (done, rate, ETA), its pace (a log line every 5 s, nothing for a short
// operation), and the terminal's status line that log lines go above.
#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <cmath>
#include <cstdio>
#include <sstream>

#include "detkit/utils/progress.h"
#include "detkit/utils/status_line_sink.h"

namespace detkit {
namespace {

// The default logger writes "<message>\n" into `out` while it lives.
class CapturedLog {
 public:
  CapturedLog() : previous_(spdlog::default_logger()) {
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out_);
    auto logger = std::make_shared<spdlog::logger>("captured", sink);
    logger->set_pattern("%v");
    spdlog::set_default_logger(logger);
  }
  ~CapturedLog() { spdlog::set_default_logger(previous_); }
  std::string text() const { return out_.str(); }

 private:
  std::ostringstream out_;
  std::shared_ptr<spdlog::logger> previous_;
};

TEST(Progress, LineHasDoneTotalPercentRateAndEta) {
  double t = 100;
  ProgressOptions options;
  options.clock = [&] { return t; };
  Progress progress("Generating shapes/train", 100, "images", options);
  t = 105;
  EXPECT_EQ(progress.line(50), "Generating shapes/train: 50/100 images (50%), 10 images/s, ETA 0:00:05");
  Progress bytes("Reading a.json", 448.6, "MB", options);
  t = 115;
  EXPECT_EQ(bytes.line(120.5), "Reading a.json: 120.5/448.6 MB (27%), 12.1 MB/s, ETA 0:00:27");
  EXPECT_EQ(bytes.line(0), "Reading a.json: 0/448.6 MB (0%), 0 MB/s, ETA ?");
}

TEST(Progress, LogsALineEveryPeriodAndNothingForAShortOperation) {
  CapturedLog log;
  double t = 0;
  ProgressOptions options;
  options.clock = [&] { return t; };
  {
    Progress quick("Quick", 10, "images", options);
    for (int i = 1; i <= 10; ++i, t += 0.4) quick.update(i);  // 4 s in all
    EXPECT_EQ(quick.lines_logged(), 0);
  }
  EXPECT_EQ(log.text(), "");
  t = 0;
  Progress slow("Slow", 13, "images", options);
  for (int i = 1; i <= 13; ++i) {
    t = i;
    slow.update(i);
  }
  EXPECT_EQ(slow.lines_logged(), 2);  // at 5 s and 10 s
  EXPECT_EQ(log.text(),
            "Slow: 5/13 images (38%), 1 images/s, ETA 0:00:08\n"
            "Slow: 10/13 images (77%), 1 images/s, ETA 0:00:03\n");
  // A caller's own text instead of the line.
  t = 20;
  slow.update(13, [] { return std::string("Inference done 13/13."); });
  EXPECT_EQ(log.text().substr(log.text().rfind("Inference")), "Inference done 13/13.\n");
}

TEST(Progress, EtaAsDetectron2WritesIt) {
  EXPECT_EQ(format_eta(0), "0:00:00");
  EXPECT_EQ(format_eta(59.9), "0:00:59");
  EXPECT_EQ(format_eta(3725), "1:02:05");
  EXPECT_EQ(format_eta(NAN), "?");
  EXPECT_EQ(format_eta(-1), "?");
}

std::string contents(FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string text;
  for (int c = std::fgetc(f); c != EOF; c = std::fgetc(f)) text += static_cast<char>(c);
  return text;
}

TEST(StatusLineSink, LogLinesGoAboveTheStatusLineWhichIsRedrawnAndCleared) {
  FILE* out = std::tmpfile();
  ASSERT_NE(out, nullptr);
  auto sink = std::make_shared<StatusLineSink>(out);
  spdlog::logger logger("status", sink);
  logger.set_pattern("%v");
  logger.info("before");
  sink->set_status("Reading a.json: 10%");
  logger.info("a log line");
  sink->set_status("Reading a.json: 20%");
  sink->set_status("");
  logger.info("after");
  EXPECT_EQ(contents(out),
            "before\n"
            "Reading a.json: 10%"
            "\r\033[Ka log line\nReading a.json: 10%"
            "\r\033[KReading a.json: 20%"
            "\r\033[K"
            "after\n");
  // Cut to one less than the width (80 where the output is not a terminal): no wrapped line.
  sink->set_status(std::string(200, 'x'));
  EXPECT_EQ(contents(out).substr(contents(out).rfind("after\n") + 6), std::string(79, 'x'));
  std::fclose(out);
}

}  // namespace
}  // namespace detkit

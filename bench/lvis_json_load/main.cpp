// lvis_json_load: detkit's LVIS loader (load_lvis_json) on an lvis_v1_train-sized file beside its
// COCO loader (load_coco_json) on a COCO file of the same size, per byte.
//
//   lvis_json_load [--scale 1.0] [--runs 3] [--dir /tmp] [--keep]
//
// Writes a synthetic LVIS JSON shaped like lvis_v1_train.json (synthetic_lvis.h, about 1.1 GB at
// scale 1), then a synthetic COCO instances JSON (bench/coco_json_load's generator) scaled to the
// same number of bytes, and loads them alternately, each in a child process (this program with
// --load-only) timed from fork to exit, its peak RSS from wait4. Prints every run, the medians,
// seconds per GB and peak MB per file MB for each format, and LVIS's over COCO's. A --baseline
// child (start and exit: libtorch's loading) is measured too. The files are deleted unless --keep.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <vector>

#include "bench/coco_json_load/child_process.h"
#include "bench/coco_json_load/synthetic_coco.h"
#include "bench/lvis_json_load/synthetic_lvis.h"
#include "detkit/data/coco/coco.h"
#include "detkit/data/coco/lvis.h"
#include "detkit/utils/error.h"

namespace {

using detkit::bench::ChildResult;

// The --load-only child: loads the file in `format` and prints what it holds.
int load_only(const std::string& file, const std::string& format) {
  spdlog::set_level(spdlog::level::warn);
  const auto start = std::chrono::steady_clock::now();
  const detkit::data::CocoDataset ds = format == "lvis" ? detkit::data::load_lvis_json(file, "")
                                                        : detkit::data::load_coco_json(file, "");
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  fmt::print("{}: images {} annotations {} dataset_mb {:.1f} load_s {:.3f}\n", format,
             ds.num_images(), ds.num_annotations(), ds.memory_bytes() / 1048576.0, seconds);
  return 0;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

ChildResult run_checked(const std::vector<std::string>& argv, const char* who) {
  ChildResult result = detkit::bench::run_child(argv);
  if (result.exit_code != 0)
    throw detkit::Error(
        fmt::format("{} failed (exit {}): {}", who, result.exit_code, result.output));
  return result;
}

std::string last_line(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  const size_t newline = s.rfind('\n');
  return newline == std::string::npos ? s : s.substr(newline + 1);
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

int compare(const std::string& dir, double scale, int runs, bool keep) {
  const std::string lvis_file = dir + "/lvis_json_load_lvis.json";
  const std::string coco_file = dir + "/lvis_json_load_coco.json";
  auto start = std::chrono::steady_clock::now();
  detkit::bench::SyntheticLvisOptions lvis_options;
  lvis_options.scale = scale;
  const auto lvis = detkit::bench::write_synthetic_lvis(lvis_file, lvis_options);
  fmt::print(
      "LVIS file: {} ({:.1f} MB, written in {:.1f} s): {} images, {} annotations, {} "
      "negative and {} not-exhaustive ids, 1203 categories\n",
      lvis_file, lvis.bytes / 1e6, seconds_since(start), lvis.images, lvis.annotations,
      lvis.negative_ids, lvis.not_exhaustive_ids);
  // The COCO generator's size is linear in its scale: a small probe gives bytes per unit.
  detkit::bench::SyntheticCocoOptions coco_options;
  coco_options.scale = 0.02;
  const double probe = detkit::bench::write_synthetic_coco(coco_file, coco_options).bytes;
  coco_options.scale = 0.02 * lvis.bytes / probe;
  start = std::chrono::steady_clock::now();
  const auto coco = detkit::bench::write_synthetic_coco(coco_file, coco_options);
  fmt::print(
      "COCO file: {} ({:.1f} MB, COCO generator at scale {:.3f}, written in {:.1f} s): {} "
      "images, {} annotations ({} crowd)\n",
      coco_file, coco.bytes / 1e6, coco_options.scale, seconds_since(start), coco.images,
      coco.annotations, coco.crowd);

  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  const ChildResult baseline = run_checked({self, "--baseline"}, "baseline");
  std::vector<double> lvis_s, lvis_mb, coco_s, coco_mb;
  std::string lvis_output, coco_output;
  const char* row = "{:>4} {:>12.2f} {:>13.0f} {:>12.2f} {:>13.0f}\n";
  fmt::print("{:>4} {:>12} {:>13} {:>12} {:>13}\n", "run", "lvis_wall_s", "lvis_peak_MB",
             "coco_wall_s", "coco_peak_MB");
  for (int run = 1; run <= runs; ++run) {  // alternating, so both see the same page cache
    const ChildResult l = run_checked({self, "--load-only", lvis_file, "--format", "lvis"}, "lvis");
    const ChildResult c = run_checked({self, "--load-only", coco_file, "--format", "coco"}, "coco");
    lvis_s.push_back(l.seconds);
    lvis_mb.push_back(l.peak_rss_mb);
    coco_s.push_back(c.seconds);
    coco_mb.push_back(c.peak_rss_mb);
    lvis_output = last_line(l.output);
    coco_output = last_line(c.output);
    fmt::print(row, run, l.seconds, l.peak_rss_mb, c.seconds, c.peak_rss_mb);
  }
  const double ls = median(lvis_s), lm = median(lvis_mb), cs = median(coco_s), cm = median(coco_mb);
  fmt::print(row, "med", ls, lm, cs, cm);
  fmt::print("children: {} | {}\n", lvis_output, coco_output);
  fmt::print("process baseline (libraries loaded, nothing read): {:.2f} s, {:.0f} MB\n",
             baseline.seconds, baseline.peak_rss_mb);
  // Per byte of file, as measured and net of the process baseline (the load's own share).
  const double lvis_gb = lvis.bytes / 1e9, coco_gb = coco.bytes / 1e9;
  const double lvis_file_mb = lvis.bytes / 1048576.0, coco_file_mb = coco.bytes / 1048576.0;
  const double bs = baseline.seconds, bm = baseline.peak_rss_mb;
  fmt::print(
      "per byte: LVIS {:.2f} s/GB, {:.3f} peak MB per file MB; COCO {:.2f} s/GB, {:.3f} "
      "peak MB per file MB\n",
      ls / lvis_gb, lm / lvis_file_mb, cs / coco_gb, cm / coco_file_mb);
  fmt::print(
      "per byte, net of the baseline: LVIS {:.2f} s/GB, {:.3f} MB per file MB; COCO {:.2f} "
      "s/GB, {:.3f} MB per file MB\n",
      (ls - bs) / lvis_gb, (lm - bm) / lvis_file_mb, (cs - bs) / coco_gb, (cm - bm) / coco_file_mb);
  fmt::print(
      "LVIS / COCO per byte: time {:.2f} ({:.2f} net), peak memory {:.2f} ({:.2f} net); "
      "target <= 1\n",
      (ls / lvis_gb) / (cs / coco_gb), ((ls - bs) / lvis_gb) / ((cs - bs) / coco_gb),
      (lm / lvis_file_mb) / (cm / coco_file_mb),
      ((lm - bm) / lvis_file_mb) / ((cm - bm) / coco_file_mb));
  if (!keep) {
    std::filesystem::remove(lvis_file);
    std::filesystem::remove(coco_file);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Times detkit's LVIS JSON loader beside its COCO loader on files of the same size"};
  double scale = 1.0;
  int runs = 3;
  bool keep = false, baseline = false;
  std::string dir = "/tmp", load_file, format = "lvis";
  app.add_option("--scale", scale, "size relative to lvis_v1_train (100,170 images)")
      ->check(CLI::PositiveNumber);
  app.add_option("--runs", runs, "alternating runs of each loader")->check(CLI::PositiveNumber);
  app.add_option("--dir", dir, "where to write the generated files");
  app.add_flag("--keep", keep, "keep the generated files");
  app.add_option("--load-only", load_file, "load this file and exit (child mode)");
  app.add_option("--format", format, "the --load-only file's format")
      ->check(CLI::IsMember({"lvis", "coco"}));
  app.add_flag("--baseline", baseline, "start and exit (child mode: the process's own cost)");
  CLI11_PARSE(app, argc, argv);
  try {
    if (baseline) return 0;
    if (!load_file.empty()) return load_only(load_file, format);
    return compare(dir, scale, runs, keep);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}

// coco_json_load: detkit's COCO loader against Python's json.load on a COCO-shaped file.
//
//   coco_json_load [--scale 1.0] [--runs 3] [--file /tmp/coco_json_load.json] [--keep] [--apis]
//
// Writes a synthetic instances JSON shaped like train2017 (synthetic_coco.h; --scale 0.1 for a
// quick run), then loads it alternately with detkit (this program re-run with --load-only, which
// calls load_coco_json) and with `/usr/bin/python3 -c "json.load(...)"`, each as a child process
// timed from fork to exit with its peak RSS from wait4. Prints every run, the medians and the
// ratios (targets: detkit at least 5x faster, at most 1/3 of the peak memory). Like every detkit
// program the child links libtorch, whose loading costs time and memory before anything is
// read: a --baseline child (which only starts and exits) measures that share. --apis also times
// simdjson's DOM against its On-Demand API on the file (simdjson_apis.h), the measurement behind
// the loader's choice of On-Demand. The file is deleted afterwards unless --keep.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <vector>

#include "bench/coco_json_load/child_process.h"
#include "bench/coco_json_load/simdjson_apis.h"
#include "bench/coco_json_load/synthetic_coco.h"
#include "detkit/data/coco/coco.h"
#include "detkit/utils/error.h"

namespace {

constexpr const char* kPython = "/usr/bin/python3";
constexpr const char* kPythonLoad =
    "import json, sys\n"
    "d = json.load(open(sys.argv[1]))\n"
    "print('images', len(d['images']), 'annotations', len(d['annotations']))\n";

// The --load-only child: loads the file and prints what it holds.
int load_only(const std::string& file) {
  spdlog::set_level(spdlog::level::warn);
  auto start = std::chrono::steady_clock::now();
  detkit::data::CocoDataset ds = detkit::data::load_coco_json(file, "");
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  fmt::print("images {} annotations {} crowd {} dataset_mb {:.1f} load_s {:.3f}\n", ds.num_images(),
             ds.num_annotations(), ds.num_crowd(), ds.memory_bytes() / 1048576.0, seconds);
  return 0;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

detkit::bench::ChildResult run_checked(const std::vector<std::string>& argv, const char* who) {
  detkit::bench::ChildResult result = detkit::bench::run_child(argv);
  if (result.exit_code != 0) {
    throw detkit::Error(
        fmt::format("{} failed (exit {}): {}", who, result.exit_code, result.output));
  }
  return result;
}

// The last line a child printed (loaders may log warnings before it).
std::string last_line(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  size_t newline = s.rfind('\n');
  return newline == std::string::npos ? s : s.substr(newline + 1);
}

int compare(const std::string& file, double scale, int runs, bool keep, bool apis) {
  auto start = std::chrono::steady_clock::now();
  detkit::bench::SyntheticCocoOptions options;
  options.scale = scale;
  detkit::bench::SyntheticCocoSummary summary = detkit::bench::write_synthetic_coco(file, options);
  double generate_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  fmt::print("file: {} ({:.1f} MB, written in {:.1f} s)\n", file, summary.bytes / 1e6, generate_s);
  fmt::print("content: {} images, {} annotations ({} crowd, {} polygons), 80 categories\n",
             summary.images, summary.annotations, summary.crowd, summary.polygons);

  std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  auto baseline = run_checked({self, "--baseline"}, "detkit baseline");
  std::vector<double> detkit_s, detkit_cpu, detkit_mb, python_s, python_cpu, python_mb;
  std::string detkit_output, python_output;
  const char* row = "{:>4} {:>14.2f} {:>13.2f} {:>15.0f} {:>14.2f} {:>13.2f} {:>15.0f}\n";
  fmt::print("{:>4} {:>14} {:>13} {:>15} {:>14} {:>13} {:>15}\n", "run", "detkit_wall_s",
             "detkit_cpu_s", "detkit_peak_MB", "python_wall_s", "python_cpu_s", "python_peak_MB");
  for (int run = 1; run <= runs; ++run) {  // alternate, so both see the same page cache
    auto d = run_checked({self, "--load-only", file}, "detkit load");
    auto p = run_checked({kPython, "-c", kPythonLoad, file}, "python json.load");
    detkit_s.push_back(d.seconds);
    detkit_cpu.push_back(d.cpu_seconds);
    detkit_mb.push_back(d.peak_rss_mb);
    python_s.push_back(p.seconds);
    python_cpu.push_back(p.cpu_seconds);
    python_mb.push_back(p.peak_rss_mb);
    detkit_output = last_line(d.output);
    python_output = last_line(p.output);
    fmt::print(row, run, d.seconds, d.cpu_seconds, d.peak_rss_mb, p.seconds, p.cpu_seconds,
               p.peak_rss_mb);
  }
  double ds = median(detkit_s), dc = median(detkit_cpu), dm = median(detkit_mb);
  double ps = median(python_s), pc = median(python_cpu), pm = median(python_mb);
  fmt::print(row, "med", ds, dc, dm, ps, pc, pm);
  fmt::print("detkit child: {}\npython child: {}\n", detkit_output, python_output);
  fmt::print(
      "detkit process baseline (libraries loaded, nothing read): {:.2f} s wall, {:.2f} s cpu, "
      "{:.0f} MB\n",
      baseline.seconds, baseline.cpu_seconds, baseline.peak_rss_mb);
  fmt::print("speed: detkit is {:.1f}x faster in wall time (target >= 5x), {:.1f}x in cpu time\n",
             ps / ds, pc / dc);
  fmt::print("peak memory: detkit uses {:.2f} of python's (target <= 0.33)\n", dm / pm);
  if (apis) {
    detkit::bench::ApiTimes times = detkit::bench::compare_simdjson_apis(file, runs);
    fmt::print(
        "simdjson, whole file in memory, best of {}: DOM {:.3f} s, On-Demand {:.3f} s "
        "(On-Demand {:.2f}x faster)\n",
        runs, times.dom_seconds, times.on_demand_seconds,
        times.dom_seconds / times.on_demand_seconds);
  }
  if (!keep) std::filesystem::remove(file);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Times detkit's COCO JSON loader against Python's json.load"};
  double scale = 1.0;
  int runs = 3;
  bool keep = false, baseline = false, apis = false;
  std::string file = "/tmp/coco_json_load.json", load_file;
  app.add_option("--scale", scale, "size relative to train2017 (118,287 images)")
      ->check(CLI::PositiveNumber);
  app.add_option("--runs", runs, "alternating runs of each loader")->check(CLI::PositiveNumber);
  app.add_option("--file", file, "where to write the generated JSON");
  app.add_flag("--keep", keep, "keep the generated JSON");
  app.add_flag("--apis", apis, "also time simdjson's DOM and On-Demand APIs on the file");
  app.add_option("--load-only", load_file, "load this file with detkit and exit (child mode)");
  app.add_flag("--baseline", baseline, "start and exit (child mode: the process's own cost)");
  CLI11_PARSE(app, argc, argv);
  try {
    if (baseline) return 0;
    if (!load_file.empty()) return load_only(load_file);
    return compare(file, scale, runs, keep, apis);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}

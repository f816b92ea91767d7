// detkit plot OUTPUT_DIR [--out FILE]: the training curves of a run (losses, learning rate,
// evaluation AP over iterations) from OUTPUT_DIR/metrics.json, as one PNG.
#include <spdlog/spdlog.h>

#include <memory>
#include <string>

#include "detkit/data/image/image_write.h"
#include "detkit/utils/error.h"
#include "detkit/utils/file_io.h"
#include "detkit/visualization/training_curves.h"
#include "tools/commands.h"

namespace detkit::tools {

CommandRunner add_plot_command(CLI::App& app) {
  struct Options {
    std::string output_dir, out;
  };
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "plot", "Draw a run's training curves (losses, learning rate, evaluation AP) from its "
              "metrics.json as a PNG");
  cmd->add_option("OUTPUT_DIR", o->output_dir, "the run's OUTPUT_DIR (holds metrics.json)")
      ->required();
  cmd->add_option("--out", o->out, "the PNG to write (default: OUTPUT_DIR/curves.png)");
  return [o, cmd] {
    if (!*cmd) return -1;
    const std::string metrics = o->output_dir + "/metrics.json";
    const std::string out = o->out.empty() ? o->output_dir + "/curves.png" : o->out;
    const cv::Mat image =
        visualization::draw_training_curves(visualization::read_metrics_json(metrics));
    const std::vector<uchar> png = data::encode_image(".png", image, out);
    atomic_write(out, std::string(png.begin(), png.end()));
    spdlog::info("Wrote {} (from {})", out, metrics);
    return 0;
  };
}

}  // namespace detkit::tools

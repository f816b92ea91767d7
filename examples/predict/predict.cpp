// predict CONFIG WEIGHTS IMAGE: runs detkit's DefaultPredictor (a Detectron2 config and weights)
// on one image and prints one line per detection, "x0 y0 x1 y1 score class", in the image's own
// pixels.
#include <cstdio>
#include <exception>
#include <string>

#include "detkit/config/defaults.h"
#include "detkit/engine/predictor.h"
#include "detkit/utils/logging.h"

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s CONFIG WEIGHTS IMAGE\n", argv[0]);
    return 2;
  }
  detkit::setup_logging();  // detkit's log (the weights it loaded) on stderr: stdout is ours
  try {
    detkit::config::CfgNode cfg = detkit::config::get_cfg();
    cfg.merge_from_file(argv[1]);
    cfg.merge_from_list({"MODEL.WEIGHTS", argv[2], "MODEL.DEVICE", "cpu"});
    detkit::engine::DefaultPredictor predictor(cfg);
    const detkit::structures::Instances found = predictor(std::string(argv[3]));
    const at::Tensor boxes = found.boxes("pred_boxes").tensor();
    const at::Tensor scores = found.tensor("scores");
    const at::Tensor classes = found.tensor("pred_classes");
    for (int64_t i = 0; i < found.size(); ++i) {
      const auto b = boxes[i];
      std::printf("%.4f %.4f %.4f %.4f %.6f %lld\n", b[0].item<double>(), b[1].item<double>(),
                  b[2].item<double>(), b[3].item<double>(), scores[i].item<double>(),
                  static_cast<long long>(classes[i].item<int64_t>()));
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "predict: %s\n", e.what());
    return 1;
  }
  return 0;
}

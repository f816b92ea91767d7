#include "detkit/engine/training_visualization.h"

#include <opencv2/core.hpp>

#include "detkit/data/image/image_write.h"
#include "detkit/utils/error.h"
#include "detkit/visualization/visualizer.h"

namespace detkit::engine {

RenderedImage render_training_visualization(const modeling::TrainingVisualization& v,
                                            const std::string& input_format) {
  const cv::Mat image = visualization::tensor_to_bgr_image(v.image.detach().cpu(), input_format);
  visualization::VisualizerOptions options;
  options.min_short_side = 0;  // the image as fed to the model, not enlarged
  std::vector<cv::Mat> panels;
  for (const at::Tensor& boxes : v.panels) {
    const at::Tensor xyxy = boxes.detach().to(at::kCPU, at::kDouble).contiguous();
    std::vector<visualization::DrawnInstance> drawn(static_cast<size_t>(xyxy.size(0)));
    const double* b = xyxy.data_ptr<double>();
    for (size_t i = 0; i < drawn.size(); ++i)
      for (int k = 0; k < 4; ++k) drawn[i].box[k] = b[4 * i + k];
    panels.push_back(visualization::draw_instances(image, drawn, options));
  }
  cv::Mat side_by_side;
  cv::hconcat(panels, side_by_side);
  const std::vector<uint8_t> png =
      data::encode_image(".png", side_by_side, "VIS_PERIOD: the training visualization");
  return {std::string(png.begin(), png.end()), side_by_side.rows, side_by_side.cols};
}

void TrainingVisualizationHook::before_step(Trainer& t) {
  if (t.iter() % period_ == 0) t.model().request_training_visualization();
}

void TrainingVisualizationHook::after_step(Trainer& t) {
  const auto v = t.model().take_training_visualization();
  if (!v) return;
  RenderedImage image = render_training_visualization(*v, input_format_);
  t.storage().put_image(v->name, std::move(image.png), image.height, image.width);
}

}  // namespace detkit::engine

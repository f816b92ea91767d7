#include "detkit/evaluation/keypoint_oks.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace detkit::evaluation {

std::vector<double> coco_person_keypoint_sigmas() {
  std::vector<double> sigmas = {.26, .25, .25,  .35,  .35, .79, .79, .72, .72,
                                .62, .62, 1.07, 1.07, .87, .87, .89, .89};
  for (double& s : sigmas) s /= 10.0;  // as numpy divides the array
  return sigmas;
}

std::vector<double> keypoint_oks(const std::vector<const std::vector<double>*>& dts,
                                 const std::vector<OksGroundTruth>& gts,
                                 const std::vector<double>& sigmas) {
  const size_t K = sigmas.size(), G = gts.size();
  std::vector<double> vars(K);
  for (size_t k = 0; k < K; ++k) vars[k] = (sigmas[k] * 2) * (sigmas[k] * 2);
  const double eps = std::numeric_limits<double>::epsilon();  // np.spacing(1)
  std::vector<double> oks(dts.size() * G, 0.0);
  for (size_t j = 0; j < G; ++j) {
    const std::vector<double>& g = *gts[j].keypoints;
    size_t labelled = 0;
    for (size_t k = 0; k < K; ++k) labelled += g[3 * k + 2] > 0;
    const auto& bb = gts[j].bbox;
    const double x0 = bb[0] - bb[2], x1 = bb[0] + bb[2] * 2;
    const double y0 = bb[1] - bb[3], y1 = bb[1] + bb[3] * 2;
    for (size_t i = 0; i < dts.size(); ++i) {
      const std::vector<double>& d = *dts[i];
      double sum = 0;
      for (size_t k = 0; k < K; ++k) {
        const double xd = d[3 * k], yd = d[3 * k + 1];
        double dx, dy;
        if (labelled > 0) {
          if (!(g[3 * k + 2] > 0)) continue;
          dx = xd - g[3 * k];
          dy = yd - g[3 * k + 1];
        } else {
          dx = std::max(0.0, x0 - xd) + std::max(0.0, xd - x1);
          dy = std::max(0.0, y0 - yd) + std::max(0.0, yd - y1);
        }
        const double e = (dx * dx + dy * dy) / vars[k] / (gts[j].area + eps) / 2;
        sum += std::exp(-e);
      }
      oks[i * G + j] = sum / static_cast<double>(labelled > 0 ? labelled : K);
    }
  }
  return oks;
}

}  // namespace detkit::evaluation

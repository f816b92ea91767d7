#include "detkit/solver/optimizer.h"

namespace detkit::solver {

std::vector<at::Tensor> Optimizer::parameters() const {
  std::vector<at::Tensor> all;
  for (size_t g = 0; g < num_groups(); ++g) {
    const auto& params = group(g).params;
    all.insert(all.end(), params.begin(), params.end());
  }
  return all;
}

}  // namespace detkit::solver

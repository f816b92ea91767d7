#pragma once
// Mixed precision's O2 (apex's, the seed port's): the model's trained weights live in a reduced
// precision (bfloat16), so forward and backward read and write them without casts, while the
// optimizer updates fp32 master copies of them; after each step the masters are rounded back
// into the model. Normalisation layers keep their fp32 weights (no master needed: the optimizer
// updates them in place as before).
//
//   MasterWeights masters(optimizer, layers::normalization_parameters(model), at::kBFloat16);
//   loss.backward();                 // gradients arrive in the model's bf16 tensors
//   masters.gradients_to_masters();  // fp32 copies in the masters; the model's are dropped
//   optimizer.step();                // updates the masters (clipping sees fp32 gradients)
//   masters.masters_to_model();
//
// The model's tensors keep their identity (the module's registered tensor is cast in place, as
// torch's module.to(dtype)), so hooks and references to them stay valid; the optimizer's groups
// keep their names, order and hyper-parameters with the masters in place of the model's tensors.
#include <ATen/core/Tensor.h>

#include <map>
#include <string>
#include <unordered_set>
#include <vector>

#include "detkit/solver/optimizer.h"

namespace detkit::solver {

class MasterWeights {
 public:
  /// Casts every fp32 parameter of `optimizer` not in `keep_fp32` to `dtype` and gives the
  /// optimizer an fp32 master copy (equal to the weight before the cast) in its place. Once per
  /// optimizer: a second MasterWeights over it would take the masters for model weights.
  MasterWeights(Optimizer& optimizer, const std::unordered_set<const c10::TensorImpl*>& keep_fp32,
                c10::ScalarType dtype);
  MasterWeights(const MasterWeights&) = delete;
  MasterWeights& operator=(const MasterWeights&) = delete;

  /// The model's tensors, parallel to optimizer.parameters(): those backward gives gradients to.
  const std::vector<at::Tensor>& model_parameters() const { return model_; }
  /// How many parameters were cast (the others, normalisation layers', are their own masters).
  size_t num_cast() const { return cast_.size(); }

  /// Each cast parameter's gradient, as fp32, becomes its master's; the model's is dropped (an
  /// absent gradient leaves the master without one).
  void gradients_to_masters();
  /// Rounds each master into its model tensor (after a step).
  void masters_to_model();
  /// The masters of the cast parameters by their state-dict names: what a checkpoint stores in
  /// place of the model's reduced-precision tensors, so that it holds the fp32 weights.
  std::map<std::string, at::Tensor> masters_by_name() const;

 private:
  struct Cast {
    std::string name;
    at::Tensor model, master;  // master: the optimizer's tensor, updated in place by its steps
  };
  std::vector<at::Tensor> model_;  // parallel to optimizer.parameters()
  std::vector<Cast> cast_;
};

}  // namespace detkit::solver

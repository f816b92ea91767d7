#pragma once
// The anomaly pass of training's divergence report: once a step went non-finite, it says where.
// It lists the parameters and buffers that already hold non-finite values and the parameters
// whose gradients from the previous step were non-finite, then runs the failing step's forward
// pass again on the same batch (same sampling seed) with every op's output checked — through
// ATen's RecordFunction observers, so no module needs instrumenting — and names the first op
// whose output is not finite together with its module: the one whose parameter or buffer the op
// used, or else the last one used before it. Debugging only: the observed pass is slow.
#include <torch/nn/module.h>

#include <functional>
#include <string>

namespace detkit::engine {

/// The findings, "; "-separated, starting "anomaly pass: ". `forward` runs the failing forward
/// pass again; an exception it throws ends the observed pass and is reported after what the pass
/// found before it.
std::string anomaly_report(const torch::nn::Module& model, const std::function<void()>& forward);

}  // namespace detkit::engine

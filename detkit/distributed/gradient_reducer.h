#pragma once
// Data-parallel gradient averaging that overlaps backward (what DDP's Reducer does): the
// parameters are grouped into buckets of about 25 MB (the first 1 MiB) in reverse order, and
// after the first step in the order their gradients arrived on rank 0; a hook on each parameter copies its gradient into its bucket as
// soon as backward has computed it, and a bucket whose gradients are all in starts its
// all-reduce while backward goes on. Buckets start in the same order on every rank. finish(),
// after backward, starts what is left, waits, and writes the means back into the gradients.
// Reduced-precision gradients (bfloat16, half) travel and are averaged in fp32. After finish()
// each gradient is a view of its bucket (DDP's gradient_as_bucket_view: no copy back), until
// the next prepare() drops it.
//
//   GradientReducer reducer(model_parameters, names);
//   reducer.prepare();           // before backward: hooks take gradients from here on
//   loss.backward();
//   reducer.finish();            // every gradient is now its mean over the ranks
#include <ATen/core/Tensor.h>

#include <memory>
#include <string>
#include <vector>

#include "detkit/distributed/comm.h"

namespace detkit::distributed {

/// What one finish() measured: seconds from the first bucket's start to the last one's end
/// (`communication`), and the part spent inside finish() (`waiting`: what backward did not hide).
struct ReductionTiming {
  double communication = 0, waiting = 0;
};

class GradientReducer {
 public:
  /// `names` parallel to `parameters`, for errors. With `hooks` false nothing is taken during
  /// backward: finish() reads every gradient then (no overlap).
  GradientReducer(std::vector<at::Tensor> parameters, std::vector<std::string> names,
                  bool hooks = true, size_t bucket_bytes = 25u << 20);
  ~GradientReducer();
  GradientReducer(const GradientReducer&) = delete;
  GradientReducer& operator=(const GradientReducer&) = delete;

  /// Arms the hooks for the coming backward.
  void prepare();
  /// Makes every parameter's gradient its mean over the ranks. A parameter without a gradient on
  /// any rank is a detkit::Error on every rank naming it and the ranks (the others do not wait:
  /// its bucket still travels, with zeros). Nothing in a world of one.
  void finish();
  const ReductionTiming& last_timing() const { return timing_; }

 private:
  struct Bucket;
  std::string name(size_t k) const;
  void build_buckets(const std::vector<size_t>& order);
  void rebuild_in_arrival_order();
  void take(size_t index, const at::Tensor& grad);
  void start_ready_buckets();
  void start(Bucket& bucket);

  std::vector<at::Tensor> parameters_;
  std::vector<std::string> names_;
  std::vector<Bucket> buckets_;
  std::vector<std::pair<size_t, size_t>> slot_;  // parameter -> (bucket, offset in it)
  std::vector<unsigned> hook_ids_;
  std::vector<bool> ready_;
  std::vector<size_t> arrival_;  // parameters in the order their gradients came this step
  size_t bucket_bytes_;
  size_t next_bucket_ = 0;
  bool armed_ = false, rebuilt_ = false;
  double first_start_ = -1;
  ReductionTiming timing_;
};

}  // namespace detkit::distributed

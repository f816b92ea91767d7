#include "detkit/distributed/gradient_reducer.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <chrono>

#include "detkit/utils/error.h"

namespace detkit::distributed {

namespace {
double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// What a gradient travels and is averaged in: Gloo has no bfloat16 ("Invalid scalar type"), and
// a mean of reduced-precision values is better taken in fp32 anyway (O2's bf16 gradients).
at::ScalarType wire_type(const at::Tensor& p) {
  const at::ScalarType t = p.scalar_type();
  return t == at::kBFloat16 || t == at::kHalf ? at::kFloat : t;
}
}  // namespace

struct GradientReducer::Bucket {
  std::vector<size_t> members;  // parameter indices
  at::Tensor buffer;            // their gradients, flat
  size_t waiting_for = 0;       // members not in yet this step
  std::unique_ptr<PendingCollective> pending;
};

GradientReducer::GradientReducer(std::vector<at::Tensor> parameters, std::vector<std::string> names,
                                 bool hooks, size_t bucket_bytes)
    : parameters_(std::move(parameters)), names_(std::move(names)), bucket_bytes_(bucket_bytes) {
  slot_.resize(parameters_.size());
  ready_.assign(parameters_.size(), false);
  // Reverse order: roughly the order backward produces the gradients, until the first step
  // has shown the real one.
  std::vector<size_t> order(parameters_.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = order.size() - 1 - k;
  build_buckets(order);
  if (hooks && get_world_size() > 1)
    for (size_t k = 0; k < parameters_.size(); ++k)
      hook_ids_.push_back(parameters_[k].register_hook([this, k](const at::Tensor& grad) {
        if (armed_) take(k, grad);
      }));
}

void GradientReducer::build_buckets(const std::vector<size_t>& order) {
  // Consecutive parameters of `order`, one wire dtype per bucket; the first bucket small (1 MiB,
  // as DDP's) so that communication starts early in backward.
  buckets_.clear();
  size_t bytes = 0, cap = std::min<size_t>(bucket_bytes_, 1u << 20);
  for (size_t k : order) {
    const at::Tensor& p = parameters_[k];
    if (buckets_.empty() || bytes >= cap ||
        wire_type(parameters_[buckets_.back().members.front()]) != wire_type(p)) {
      if (!buckets_.empty()) cap = bucket_bytes_;
      buckets_.emplace_back();
      bytes = 0;
    }
    Bucket& b = buckets_.back();
    const int64_t offset = b.members.empty() ? 0 : slot_[b.members.back()].second +
                                                       parameters_[b.members.back()].numel();
    slot_[k] = {buckets_.size() - 1, static_cast<size_t>(offset)};
    b.members.push_back(k);
    bytes += p.numel() * c10::elementSize(wire_type(p));
  }
  for (Bucket& b : buckets_) {
    int64_t numel = 0;
    for (size_t k : b.members) numel += parameters_[k].numel();
    const at::Tensor& first = parameters_[b.members.front()];
    b.buffer = at::zeros({numel}, first.options().dtype(wire_type(first)).requires_grad(false));
  }
}

void GradientReducer::rebuild_in_arrival_order() {
  // As DDP after its first iteration: buckets in the order the gradients arrived, rank 0's order
  // on every rank (collectives must pair up), so that no early bucket waits for a late gradient.
  at::Tensor order = at::empty({static_cast<int64_t>(parameters_.size())}, at::kLong);
  int64_t* o = order.data_ptr<int64_t>();
  for (size_t i = 0; i < arrival_.size(); ++i) o[i] = static_cast<int64_t>(arrival_[i]);
  std::vector<at::Tensor> shared = {order};
  communicator().broadcast(shared, 0);
  o = shared[0].data_ptr<int64_t>();
  std::vector<size_t> ordered(parameters_.size());
  for (size_t i = 0; i < ordered.size(); ++i) ordered[i] = static_cast<size_t>(o[i]);
  build_buckets(ordered);
  rebuilt_ = true;
}

GradientReducer::~GradientReducer() {
  for (size_t k = 0; k < hook_ids_.size(); ++k) parameters_[k].remove_hook(hook_ids_[k]);
}

std::string GradientReducer::name(size_t k) const {
  return k < names_.size() ? names_[k] : "#" + std::to_string(k);
}

void GradientReducer::prepare() {
  if (get_world_size() == 1) return;
  // Gradients left as views of a bucket by the last finish(): dropped, so that a backward that
  // accumulates does not add into the slot its hook is about to fill.
  for (at::Tensor& p : parameters_) {
    const at::Tensor& grad = p.grad();
    if (!grad.defined()) continue;
    for (const Bucket& b : buckets_)
      if (grad.is_alias_of(b.buffer)) {
        p.mutable_grad().reset();
        break;
      }
  }
  for (Bucket& b : buckets_) {
    b.waiting_for = b.members.size();
    b.pending.reset();
  }
  ready_.assign(parameters_.size(), false);
  arrival_.clear();
  next_bucket_ = 0;
  first_start_ = -1;
  armed_ = !hook_ids_.empty();
}

void GradientReducer::take(size_t k, const at::Tensor& grad) {
  if (ready_[k])
    throw Error("parameter " + name(k) +
                " received a second gradient in one step; data-parallel training reduces each "
                "parameter's gradient once per step");
  ready_[k] = true;
  arrival_.push_back(k);
  const auto [bucket, offset] = slot_[k];
  Bucket& b = buckets_[bucket];
  {
    at::NoGradGuard no_grad;
    at::Tensor slot = b.buffer.narrow(0, static_cast<int64_t>(offset), parameters_[k].numel());
    if (grad.defined())
      slot.copy_(grad.reshape({-1}));
    else
      slot.zero_();  // none on this rank: zeros travel, so that the other ranks do not wait
  }
  if (--b.waiting_for == 0) start_ready_buckets();
}

void GradientReducer::start_ready_buckets() {
  // In bucket order on every rank: Gloo pairs collectives by the order they are started in.
  while (next_bucket_ < buckets_.size() && buckets_[next_bucket_].waiting_for == 0)
    start(buckets_[next_bucket_++]);
}

void GradientReducer::start(Bucket& b) {
  if (first_start_ < 0) first_start_ = now();
  b.buffer.div_(get_world_size());
  b.pending = communicator().start_all_reduce_sum(b.buffer);
}

void GradientReducer::finish() {
  const int world = get_world_size();
  if (world == 1) return;
  armed_ = false;
  const double entered = now();
  at::NoGradGuard no_grad;
  // What the hooks did not take (every gradient, when hooks are off), and the parameters that
  // got none on this rank (zeros travel for them; the error comes after the wait).
  at::Tensor missing = at::zeros({static_cast<int64_t>(parameters_.size())}, at::kByte);
  uint8_t* is_missing = missing.data_ptr<uint8_t>();
  for (size_t k = 0; k < parameters_.size(); ++k) {
    if (ready_[k]) continue;
    const at::Tensor& grad = parameters_[k].grad();
    if (!grad.defined()) is_missing[k] = 1;
    take(k, grad);
  }
  start_ready_buckets();
  for (Bucket& b : buckets_) b.pending->wait();
  const double done = now();
  timing_.waiting = done - entered;
  timing_.communication = done - (first_start_ < 0 ? entered : first_start_);
  // As DDP without find_unused_parameters: every trainable parameter takes part in every step
  // on every rank. Every rank sees the same flags, so every rank stops here with this error.
  const std::vector<at::Tensor> all = communicator().all_gather(missing);
  for (size_t k = 0; k < parameters_.size(); ++k) {
    std::string ranks;
    for (int r = 0; r < world; ++r)
      if (all[r].data_ptr<uint8_t>()[k] != 0)
        ranks += (ranks.empty() ? "" : ", ") + std::to_string(r);
    if (ranks.empty()) continue;
    throw Error("parameter " + name(k) + " got no gradient on rank " + ranks + " of " + std::to_string(world) +
                ": with several ranks every trainable parameter must take part in every step's "
                "loss (DDP's rule without find_unused_parameters); freeze it or make the loss "
                "use it");
  }
  for (size_t k = 0; k < parameters_.size(); ++k) {
    const auto [bucket, offset] = slot_[k];
    const at::Tensor mean =
        buckets_[bucket].buffer.narrow(0, static_cast<int64_t>(offset), parameters_[k].numel())
            .view(parameters_[k].sizes());
    at::Tensor& grad = parameters_[k].mutable_grad();
    // DDP's gradient_as_bucket_view: the gradient becomes the bucket's slice, no copy back
    // (a copy, converting, where the bucket travels in another dtype).
    if (mean.scalar_type() == grad.scalar_type())
      grad = mean;
    else
      grad.copy_(mean);
  }
  if (!rebuilt_ && !hook_ids_.empty()) rebuild_in_arrival_order();
}

}  // namespace detkit::distributed

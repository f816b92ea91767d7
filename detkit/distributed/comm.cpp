#include "detkit/distributed/comm.h"

#include <ATen/ATen.h>

#include <string>

#include "detkit/utils/error.h"

namespace detkit::distributed {

namespace {
std::shared_ptr<Communicator>& current() {
  static std::shared_ptr<Communicator> comm = std::make_shared<SingleProcess>();
  return comm;
}

std::string n(int v) { return std::to_string(v); }
}  // namespace

void check_topology(const Topology& t) {
  if (t.world_size < 1) throw Error("world size must be at least 1, got " + n(t.world_size));
  if (t.rank < 0 || t.rank >= t.world_size)
    throw Error("rank " + n(t.rank) + " is outside a world of " + n(t.world_size));
  if (t.local_world_size < 1 || t.world_size % t.local_world_size != 0)
    throw Error("rank " + n(t.rank) + ": local world size " + n(t.local_world_size) +
                " does not divide the world size " + n(t.world_size));
  if (t.local_rank < 0 || t.local_rank >= t.local_world_size)
    throw Error("rank " + n(t.rank) + ": local rank " + n(t.local_rank) +
                " is outside a local world of " + n(t.local_world_size));
}

Communicator& communicator() { return *current(); }

std::shared_ptr<Communicator> install(std::shared_ptr<Communicator> comm) {
  if (!comm) throw Error("distributed::install needs a communicator");
  check_topology(comm->topology());
  std::swap(current(), comm);
  return comm;
}

int get_rank() { return communicator().topology().rank; }
int get_world_size() { return communicator().topology().world_size; }
int get_local_rank() { return communicator().topology().local_rank; }
int get_local_size() { return communicator().topology().local_world_size; }
bool is_main_process() { return get_rank() == 0; }

void synchronize() {
  if (get_world_size() > 1) communicator().barrier();
}

namespace {
// Groups `tensors` into buckets of about `bytes`, all-reduces each bucket as one flat buffer and
// copies the sums back: one collective per bucket instead of one per tensor.
void all_reduce_in_buckets(const std::vector<at::Tensor>& tensors, size_t bytes) {
  size_t begin = 0;
  while (begin < tensors.size()) {
    size_t end = begin, size = 0;
    while (end < tensors.size() && (end == begin || size < bytes)) {
      size += tensors[end].numel() * tensors[end].element_size();
      ++end;
    }
    std::vector<at::Tensor> flat;
    for (size_t i = begin; i < end; ++i) flat.push_back(tensors[i].reshape({-1}));
    std::vector<at::Tensor> bucket = {at::cat(flat)};
    communicator().all_reduce_sum(bucket);
    int64_t offset = 0;
    for (size_t i = begin; i < end; ++i) {
      const int64_t n = tensors[i].numel();
      tensors[i].view({-1}).copy_(bucket[0].narrow(0, offset, n));
      offset += n;
    }
    begin = end;
  }
}
constexpr size_t kBucketBytes = 25u << 20;  // DDP's bucket_cap_mb
}  // namespace

void average_gradients(const std::vector<at::Tensor>& parameters) {
  const int world = get_world_size();
  if (world == 1) return;
  at::NoGradGuard no_grad;
  // Which parameters have a gradient on any rank.
  std::vector<at::Tensor> has = {at::zeros({static_cast<int64_t>(parameters.size())}, at::kFloat)};
  float* any = has[0].data_ptr<float>();
  for (size_t i = 0; i < parameters.size(); ++i)
    if (parameters[i].grad().defined()) any[i] = 1;
  communicator().all_reduce_sum(has);
  any = has[0].data_ptr<float>();
  std::vector<at::Tensor> grads;
  for (size_t i = 0; i < parameters.size(); ++i) {
    if (any[i] == 0) continue;
    at::Tensor p = parameters[i];
    if (!p.grad().defined()) p.mutable_grad() = at::zeros_like(p);
    grads.push_back(p.grad());
  }
  for (at::Tensor& g : grads) g.div_(world);
  all_reduce_in_buckets(grads, kBucketBytes);
}

void broadcast_from_main(const std::vector<at::Tensor>& tensors) {
  if (get_world_size() == 1) return;
  at::NoGradGuard no_grad;
  for (const at::Tensor& t : tensors) {
    std::vector<at::Tensor> one = {t.detach().contiguous()};
    communicator().broadcast(one, 0);
    if (!one[0].is_same(t)) t.detach().copy_(one[0]);
  }
}

}  // namespace detkit::distributed

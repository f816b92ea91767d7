#pragma once
// Where this process sits in a training job, and what ranks do together (Detectron2's
// detectron2/utils/comm.py). A process starts as the only rank of a world of one, whose barrier
// returns at once; launching several processes installs a communicator over a c10d process
// group. Everything that writes files for the whole job (config.yaml, metrics.json, checkpoints,
// evaluation results) asks is_main_process(); every rank's randomness that must differ between
// ranks takes get_rank().
#include <ATen/core/Tensor.h>

#include <memory>
#include <string>
#include <vector>

namespace detkit::distributed {

/// The rank of this process among all (`rank` of `world_size`) and among the processes on its
/// machine (`local_rank` of `local_world_size`), as torchrun's RANK / WORLD_SIZE / LOCAL_RANK /
/// LOCAL_WORLD_SIZE.
struct Topology {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int local_world_size = 1;
};

/// A detkit::Error naming the field when `t` is not a valid place in a job (world size below 1,
/// a rank outside [0, world size), a local world that does not divide into the world).
void check_topology(const Topology& t);

/// A collective in flight: wait() returns once it is done, its tensors holding the result (a
/// failure or time-out is a detkit::Error naming the operation).
class PendingCollective {
 public:
  virtual ~PendingCollective() = default;
  virtual void wait() = 0;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual const Topology& topology() const = 0;
  /// Returns once every rank has called it.
  virtual void barrier() = 0;
  /// Replaces each tensor by its sum over all ranks (every rank calls it with tensors of the
  /// same shapes, in the same order).
  virtual void all_reduce_sum(std::vector<at::Tensor>& tensors) = 0;
  /// Replaces each tensor by rank `root`'s.
  virtual void broadcast(std::vector<at::Tensor>& tensors, int root) = 0;
  /// Every rank's `input` (the same shape and dtype on every rank), in rank order.
  virtual std::vector<at::Tensor> all_gather(const at::Tensor& input) = 0;
  /// Starts replacing `tensor` (contiguous) by its sum over all ranks, in place, and returns at
  /// once; every rank starts the same collectives in the same order. The default runs it
  /// before returning.
  virtual std::unique_ptr<PendingCollective> start_all_reduce_sum(const at::Tensor& tensor);
  /// How the ranks reach each other, for the log ("" for a world of one).
  virtual std::string description() const { return ""; }
};

/// The only rank of a world of one: every collective returns at once, tensors unchanged.
class SingleProcess : public Communicator {
 public:
  const Topology& topology() const override { return topology_; }
  void barrier() override {}
  void all_reduce_sum(std::vector<at::Tensor>&) override {}
  void broadcast(std::vector<at::Tensor>&, int) override {}
  std::vector<at::Tensor> all_gather(const at::Tensor& input) override { return {input.clone()}; }

 private:
  Topology topology_;
};

/// This process's communicator: a SingleProcess until install() sets another.
Communicator& communicator();
/// Makes `comm` this process's communicator (its topology checked first, see check_topology) and
/// returns the previous one, so a caller can put it back. Not thread-safe: call it before
/// training starts.
std::shared_ptr<Communicator> install(std::shared_ptr<Communicator> comm);

int get_rank();
int get_world_size();
int get_local_rank();
int get_local_size();
/// Rank 0: the process that writes what belongs to the whole job.
bool is_main_process();
/// A barrier across all ranks; returns at once in a world of one (Detectron2's synchronize).
void synchronize();

/// Data-parallel gradient averaging after backward, without overlap (GradientReducer's, with its
/// hooks off): every parameter's gradient becomes its mean over the ranks, in buckets of about
/// 25 MB. A parameter without a gradient on any rank is a detkit::Error on every rank, naming it
/// (from `names`, parallel to `parameters`) and the ranks. Nothing in a world of one.
void average_gradients(const std::vector<at::Tensor>& parameters,
                       const std::vector<std::string>& names = {});

/// Every rank's `bytes`, in rank order, on every rank (Detectron2's comm.all_gather of a
/// picklable object: the caller serialises). Sizes may differ between ranks.
std::vector<std::string> all_gather_bytes(const std::string& bytes);

/// Copies rank 0's values of `tensors` (parameters and buffers) to every rank, as DDP does when
/// it wraps a model, so that all ranks start from the same weights.
void broadcast_from_main(const std::vector<at::Tensor>& tensors);

}  // namespace detkit::distributed

#pragma once
// A communicator over c10d's process groups (the collectives PyTorch's torch.distributed uses),
// joined through a TCPStore rendezvous that rank 0 serves at master_addr:master_port. Backend
// "gloo": ProcessGroupGloo for every tensor. Backend "nccl": ProcessGroupNCCL for CUDA tensors on
// the rank's current GPU, and a Gloo group beside it for CPU tensors and barriers, as Detectron2
// keeps a Gloo group for gathering Python objects (comm._get_global_gloo_group).
#include <chrono>
#include <memory>
#include <string>

#include "detkit/distributed/comm.h"

namespace detkit::distributed {

struct Rendezvous {
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  /// How long to wait for every rank to join, and for any one collective.
  std::chrono::milliseconds timeout = std::chrono::minutes(30);  // Detectron2's default
  /// "gloo" or "nccl" (which needs this detkit built with CUDA and a GPU made current for the
  /// rank, use_gpu_of_local_rank).
  std::string backend = "gloo";
  /// The rank's GPU, for "nccl" (-1: none).
  int gpu = -1;
};

class ProcessGroupCommunicator : public Communicator {
 public:
  /// Joins the job; blocks until all `topology.world_size` ranks have joined. A rank that cannot
  /// reach the store, or whose peers do not come within `timeout`, gets a detkit::Error naming
  /// its rank, the address and how many ranks arrived.
  ProcessGroupCommunicator(const Topology& topology, const Rendezvous& rendezvous);
  ~ProcessGroupCommunicator() override;

  const Topology& topology() const override { return topology_; }
  void barrier() override;
  void all_reduce_sum(std::vector<at::Tensor>& tensors) override;
  void broadcast(std::vector<at::Tensor>& tensors, int root) override;
  std::vector<at::Tensor> all_gather(const at::Tensor& input) override;
  std::unique_ptr<PendingCollective> start_all_reduce_sum(const at::Tensor& tensor) override;
  std::string description() const override;

 private:
  bool on_gpu(const at::Tensor& t) const;  // a tensor NCCL reduces
  struct Group;  // the store and the process groups (c10d headers stay in the .cpp)
  Topology topology_;
  Rendezvous rendezvous_;
  std::unique_ptr<Group> group_;
};

}  // namespace detkit::distributed

#pragma once
// A communicator over c10d's ProcessGroupGloo (the collectives PyTorch's torch.distributed uses
// on CPU), joined through a TCPStore rendezvous that rank 0 serves at master_addr:master_port.
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
};

class GlooCommunicator : public Communicator {
 public:
  /// Joins the job; blocks until all `topology.world_size` ranks have joined. A rank that cannot
  /// reach the store, or whose peers do not come within `timeout`, gets a detkit::Error naming
  /// its rank, the address and how many ranks arrived.
  GlooCommunicator(const Topology& topology, const Rendezvous& rendezvous);
  ~GlooCommunicator() override;

  const Topology& topology() const override { return topology_; }
  void barrier() override;
  void all_reduce_sum(std::vector<at::Tensor>& tensors) override;
  void broadcast(std::vector<at::Tensor>& tensors, int root) override;
  std::vector<at::Tensor> all_gather(const at::Tensor& input) override;
  std::unique_ptr<PendingCollective> start_all_reduce_sum(const at::Tensor& tensor) override;
  std::string description() const override;

 private:
  struct Group;  // the store and the process group (c10d headers stay in the .cpp)
  Topology topology_;
  Rendezvous rendezvous_;
  std::unique_ptr<Group> group_;
};

}  // namespace detkit::distributed

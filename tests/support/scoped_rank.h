#pragma once
// Makes this test process believe it is one rank of a larger job, for as long as the object
// lives: the installed communicator has the given topology and counts the barriers it is asked
// for (there are no other ranks to wait for). The previous communicator comes back at the end.
#include <memory>

#include "detkit/distributed/comm.h"

namespace detkit::testing {

class CountingCommunicator : public distributed::Communicator {
 public:
  explicit CountingCommunicator(distributed::Topology t) : topology_(t) {}
  const distributed::Topology& topology() const override { return topology_; }
  void barrier() override { ++barriers; }
  // No other ranks: they are taken to hold this rank's values, so a sum is world size times this
  // rank's, a broadcast leaves it and an all-gather repeats it.
  void all_reduce_sum(std::vector<at::Tensor>& tensors) override {
    ++collectives;
    for (at::Tensor& t : tensors) t.mul_(topology_.world_size);
  }
  void broadcast(std::vector<at::Tensor>&, int) override { ++collectives; }
  std::vector<at::Tensor> all_gather(const at::Tensor& input) override {
    ++collectives;
    return std::vector<at::Tensor>(topology_.world_size, input.clone());
  }
  int barriers = 0, collectives = 0;

 private:
  distributed::Topology topology_;
};

class ScopedRank {
 public:
  ScopedRank(int rank, int world_size)
      : comm_(std::make_shared<CountingCommunicator>(
            distributed::Topology{rank, world_size, rank, world_size})),
        previous_(distributed::install(comm_)) {}
  ~ScopedRank() { distributed::install(previous_); }
  ScopedRank(const ScopedRank&) = delete;
  ScopedRank& operator=(const ScopedRank&) = delete;

  int barriers() const { return comm_->barriers; }
  int collectives() const { return comm_->collectives; }

 private:
  std::shared_ptr<CountingCommunicator> comm_;
  std::shared_ptr<distributed::Communicator> previous_;
};

}  // namespace detkit::testing

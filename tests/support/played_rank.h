#pragma once
// Two ranks played in turn in one process, for evaluators that gather to rank 0: rank 1 runs
// first under a PlayedRank that records what it sends; rank 0 then runs under a PlayedRank that
// receives exactly that as rank 1's part of each all-gather.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <deque>
#include <memory>
#include <vector>

#include "detkit/distributed/comm.h"

namespace detkit::testing {

// Rank `rank` of two; all_gather returns this rank's input in its place and, in the other's,
// what `peer` holds (front first), recording this rank's inputs in `sent`.
class PlayedRank : public distributed::Communicator {
 public:
  PlayedRank(int rank, std::deque<at::Tensor> peer)
      : topology_{rank, 2, rank, 2}, peer_(std::move(peer)) {}
  const distributed::Topology& topology() const override { return topology_; }
  void barrier() override {}
  void all_reduce_sum(std::vector<at::Tensor>&) override {
    ADD_FAILURE() << "unexpected all-reduce";
  }
  void broadcast(std::vector<at::Tensor>&, int) override {
    ADD_FAILURE() << "unexpected broadcast";
  }
  std::vector<at::Tensor> all_gather(const at::Tensor& input) override {
    sent.push_back(input.clone());
    at::Tensor other = input.clone();
    if (!peer_.empty()) {
      other = peer_.front();
      peer_.pop_front();
    }
    return topology_.rank == 0 ? std::vector{input.clone(), other}
                               : std::vector{other, input.clone()};
  }
  std::deque<at::Tensor> sent;

 private:
  distributed::Topology topology_;
  std::deque<at::Tensor> peer_;
};

/// Installs a communicator for the object's lifetime.
class AsRank {
 public:
  explicit AsRank(std::shared_ptr<distributed::Communicator> c)
      : previous_(distributed::install(c)) {}
  ~AsRank() { distributed::install(previous_); }
  AsRank(const AsRank&) = delete;
  AsRank& operator=(const AsRank&) = delete;

 private:
  std::shared_ptr<distributed::Communicator> previous_;
};

}  // namespace detkit::testing

// The NCCL backend of ProcessGroupCommunicator: refused with the reason where it cannot run (no
// GPU for the rank, a detkit without CUDA, an unknown backend); on a GPU, one rank over NCCL on
// loopback reduces, broadcasts and gathers CUDA tensors on the GPU and CPU tensors through its
// Gloo group (skipped, saying why, where no GPU is visible).
#include <gtest/gtest.h>

#include "detkit/distributed/nccl_backend.h"
#include "detkit/distributed/process_group_communicator.h"
#include "detkit/utils/cuda_build.h"
#include "tests/support/error_of.h"
#include "tests/support/free_port.h"

namespace detkit::distributed {
namespace {

using testing::free_port;

TEST(NcclBackend, RefusedWithTheReasonBeforeAnyConnection) {
  Rendezvous r;
  r.master_port = free_port();
  r.backend = "mpi";
  testing::expect_contains(testing::error_of([&] {
                             ProcessGroupCommunicator({0, 1, 0, 1}, r);
                           }),
                           "rank 0 of 1 at 127.0.0.1:" + std::to_string(r.master_port) +
                               ": unknown backend 'mpi' (DETKIT_DIST_BACKEND): 'gloo' or 'nccl'");
  r.backend = "nccl";
  r.gpu = -1;  // what launch_environment passes where no GPU is visible
  const std::string message = testing::error_of([&] { ProcessGroupCommunicator({0, 1, 0, 1}, r); });
  std::cout << "[ nccl ] " << message << "\n";
  testing::expect_contains(message, nccl_available() ? "the NCCL backend needs a GPU for each rank"
                                                     : "needs detkit built with CUDA");
  testing::expect_contains(message, "use DETKIT_DIST_BACKEND=gloo");
}

TEST(NcclBackend, OneRankOnTheGpu) {
  if (visible_gpu_count() == 0 || !nccl_available())
    GTEST_SKIP() << (nccl_available() ? "no CUDA device visible" : "detkit built without CUDA");
  Rendezvous r;
  r.master_port = free_port();
  r.backend = "nccl";
  r.gpu = use_gpu_of_local_rank(0);
  r.timeout = std::chrono::seconds(60);
  ProcessGroupCommunicator comm({0, 1, 0, 1}, r);
  testing::expect_contains(comm.description(), "backend nccl on GPU 0 (gloo for CPU tensors)");
  const at::Tensor on_gpu = at::arange(6, at::TensorOptions().device(at::kCUDA).dtype(at::kFloat));
  std::vector<at::Tensor> tensors = {on_gpu.clone(), at::arange(4, at::kFloat)};
  comm.all_reduce_sum(tensors);
  EXPECT_TRUE(tensors[0].is_cuda());
  EXPECT_TRUE(at::equal(tensors[0].cpu(), on_gpu.cpu()));  // one rank: the sum is itself
  EXPECT_TRUE(at::equal(tensors[1], at::arange(4, at::kFloat)));
  comm.broadcast(tensors, 0);
  const std::vector<at::Tensor> gathered = comm.all_gather(on_gpu);
  ASSERT_EQ(gathered.size(), 1u);
  EXPECT_TRUE(gathered[0].is_cuda() && at::equal(gathered[0].cpu(), on_gpu.cpu()));
  auto pending = comm.start_all_reduce_sum(tensors[0]);
  pending->wait();
  EXPECT_TRUE(at::equal(tensors[0].cpu(), on_gpu.cpu()));
  comm.barrier();
}

}  // namespace
}  // namespace detkit::distributed

// OrderedMapper's workers run their libtorch ops on one thread each (the training step has the
// cores), while the consumer keeps its count.
#include <gtest/gtest.h>

#include <ATen/Parallel.h>
#include <ATen/ops/zeros.h>

#include "detkit/data/ordered_mapper.h"
#include "detkit/utils/threads.h"

namespace detkit::data {
namespace {

TEST(OrderedMapper, WorkersRunTheirOpsOnOneThreadEach) {
  configure_threads(2);
  size_t next = 0;
  OrderedMapper mapper([&]() -> std::optional<StreamSample> {
                         if (next == 4) return std::nullopt;
                         const size_t k = next++;
                         return StreamSample{k, k};
                       },
                       [](uint64_t, size_t) {
                         structures::ModelInput input;
                         input.image = at::zeros({3, 64, 64});  // an op in the worker
                         input.height = at::get_num_threads();  // what the worker's ops get
                         return input;
                       },
                       /*num_workers=*/2, /*capacity=*/2);
  int samples = 0;
  while (auto sample = mapper.next()) {
    EXPECT_EQ(sample->input.height, 1) << "position " << sample->position;
    ++samples;
  }
  EXPECT_EQ(samples, 4);
  EXPECT_EQ(at::get_num_threads(), 2);
}

}  // namespace
}  // namespace detkit::data

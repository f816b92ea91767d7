#pragma once
// OrderedMapper: worker threads map a sequence of samples (stream position, dataset index),
// results come back in sequence order through a bounded window. Which sample sits at sequence
// number n, and what mapping it gives, never depends on thread timing: numbers are claimed in
// order, the sample source is called once per number under a lock, and the consumer takes
// number n before n + 1.
//
// A worker's exception is handed to the consumer at its number (rethrown by next()). The
// destructor stops the workers and joins them; a worker in the middle of a sample finishes it
// first, so stopping early never hangs.
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "detkit/data/samplers/samplers.h"
#include "detkit/structures/model_io.h"

namespace detkit::data {

/// One mapped sample: its stream position and dataset index (the source's), the model's input.
struct MappedSample {
  uint64_t position;
  size_t index;
  structures::ModelInput input;
};

class OrderedMapper {
 public:
  /// The next sample, or nullopt when the sequence ends. Called in sequence order.
  using SampleSource = std::function<std::optional<StreamSample>()>;
  /// Maps one sample. Called concurrently from the workers.
  using MapFunction = std::function<structures::ModelInput(uint64_t position, size_t index)>;

  /// `num_workers` 0 maps in the consumer's thread; otherwise at most `capacity` (>= 1)
  /// samples are claimed ahead of the consumer.
  OrderedMapper(SampleSource source, MapFunction map, int num_workers, size_t capacity);
  ~OrderedMapper();
  OrderedMapper(const OrderedMapper&) = delete;
  OrderedMapper& operator=(const OrderedMapper&) = delete;

  /// The next sample of the sequence, mapped; nullopt once the sequence has ended. Rethrows the
  /// exception its mapping threw.
  std::optional<MappedSample> next();

 private:
  struct Slot {
    std::optional<MappedSample> sample;
    std::exception_ptr error;
  };
  void work();
  /// `sample` mapped by map_, with its position and index.
  MappedSample map(const StreamSample& sample) const;

  SampleSource source_;
  MapFunction map_;
  size_t capacity_;

  std::mutex mutex_;
  std::condition_variable room_;   // a sample may be claimed, or stopping
  std::condition_variable ready_;  // a result arrived, or the sequence ended
  uint64_t claimed_ = 0;           // next sequence number to claim
  uint64_t consumed_ = 0;          // next sequence number to hand out
  std::optional<uint64_t> end_;    // the sequence number where the sequence ended
  bool stop_ = false;
  std::map<uint64_t, Slot> done_;
  std::vector<std::thread> workers_;
};

}  // namespace detkit::data

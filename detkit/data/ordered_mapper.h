#pragma once
// OrderedMapper: worker threads map a sequence of dataset indices, results come back in
// sequence order through a bounded window. Which index sits at position p, and what mapping it
// gives, never depends on thread timing: positions are claimed in order, the index source is
// called once per position under a lock, and the consumer takes position p before p + 1.
//
// A worker's exception is handed to the consumer at its position (rethrown by next()). The
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

#include "detkit/structures/model_io.h"

namespace detkit::data {

/// One mapped sample: its position in the stream, its dataset index, the model's input.
struct MappedSample {
  uint64_t position;
  size_t index;
  structures::ModelInput input;
};

class OrderedMapper {
 public:
  /// The next dataset index, or nullopt when the sequence ends. Called in position order.
  using IndexSource = std::function<std::optional<size_t>()>;
  /// Maps the index at a position. Called concurrently from the workers.
  using MapFunction = std::function<structures::ModelInput(uint64_t position, size_t index)>;

  /// `num_workers` 0 maps in the consumer's thread; otherwise at most `capacity` (>= 1)
  /// positions are claimed ahead of the consumer.
  OrderedMapper(IndexSource source, MapFunction map, int num_workers, size_t capacity);
  ~OrderedMapper();
  OrderedMapper(const OrderedMapper&) = delete;
  OrderedMapper& operator=(const OrderedMapper&) = delete;

  /// The sample at the next position; nullopt once the sequence has ended. Rethrows the
  /// exception its mapping threw.
  std::optional<MappedSample> next();

 private:
  struct Slot {
    std::optional<MappedSample> sample;
    std::exception_ptr error;
  };
  void work();

  IndexSource source_;
  MapFunction map_;
  size_t capacity_;

  std::mutex mutex_;
  std::condition_variable room_;   // a position may be claimed, or stopping
  std::condition_variable ready_;  // a result arrived, or the sequence ended
  uint64_t claimed_ = 0;           // next position to claim
  uint64_t consumed_ = 0;          // next position to hand out
  std::optional<uint64_t> end_;    // the position where the sequence ended
  bool stop_ = false;
  std::map<uint64_t, Slot> done_;
  std::vector<std::thread> workers_;
};

}  // namespace detkit::data

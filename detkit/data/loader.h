#pragma once
// Data loaders (Detectron2's build_detection_train_loader / build_detection_test_loader).
//
//   auto loader = detkit::data::build_detection_train_loader(cfg);   // DATASETS.TRAIN
//   std::vector<detkit::structures::ModelInput> batch = loader->next_batch();
//   auto losses = model->losses(batch);
//
//   auto test = detkit::data::build_detection_test_loader(cfg, "coco_2017_val");
//   while (auto sample = test->next()) predict(sample->input), sample->image_id ...
//
// Which samples make up a batch is planned first, on the annotation file's image sizes
// (BatchPlanner: sampler, then aspect-ratio grouping); DATALOADER.NUM_WORKERS threads then map
// (decode, augment) the planned samples into a bounded window (OrderedMapper). Sample k of the
// stream all ranks share draws its augmentations from SampleRng(seed, k), and seeds the model's
// draws for it (ModelInput::sampling_seed) from (seed, k): the batches depend on the seed only,
// 1 or 4 workers give identical batches. How ranks share the stream:
//   world-size invariant (DATALOADER.WORLD_SIZE_INVARIANT, the default): every rank plans the
//     whole stream into global batches of batch_size * world_size and maps only its slice
//     (rank r: samples r * batch_size .. (r + 1) * batch_size - 1 of each), so the global batch
//     (images, grouping, augmentations, seeds) is the same at any world size;
//   Detectron2's: rank r takes positions r, r + world_size, ... of the stream and groups them
//     into batches of its own.
// A loader made with start_batch N (a run resumed at iteration N) gives the batches N, N+1, ...
// of that stream without decoding an image of batches 0..N-1: the first N are planned and
// dropped. Destroying a loader stops and joins its threads; an exception in a worker is
// rethrown by next_batch()/next().
#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "detkit/config/cfg_node.h"
#include "detkit/data/bad_images.h"
#include "detkit/data/dataset_mapper.h"
#include "detkit/data/detection_dataset.h"
#include "detkit/data/ordered_mapper.h"
#include "detkit/data/samplers/batch_planner.h"
#include "detkit/data/samplers/samplers.h"

namespace detkit::data {

struct TrainLoaderOptions {
  size_t batch_size = 2;  // images per batch on this rank
  int num_workers = 4;    // 0: map in the consumer's thread
  bool aspect_ratio_grouping = true;
  uint64_t seed = 0;  // sampler and augmentations; the same on every rank
  int rank = 0, world_size = 1;
  /// Each rank maps its slice of global batches planned from the whole stream (the same batches
  /// at any world size); false: Detectron2's sharded stream, grouped per rank.
  bool world_size_invariant = true;
  std::string sampler = "TrainingSampler";  // or "RepeatFactorTrainingSampler"
  double repeat_threshold = 0.0;            // RepeatFactorTrainingSampler only
  bool repeat_sqrt = true;
  int64_t start_batch = 0;  // batches already consumed (a resumed run's start iteration)
  /// DATALOADER.ON_BAD_IMAGE and what goes with it (data/bad_images.h). With kSkip a sample whose
  /// image is bad is replaced by the next image of the dataset in the same aspect-ratio class
  /// (any image without grouping) that is not bad, with the sample's own augmentation draws: the
  /// batches then depend on the seed and the files only, and a resumed run repeats them.
  BadImageOptions bad_images;
  /// Each image in page-locked memory once mapped (in the worker), so that the model's copy to
  /// a GPU runs without blocking the host; from MODEL.DEVICE cuda where a GPU is visible.
  bool pin_memory = false;
};

/// An infinite stream of training batches.
class TrainLoader {
 public:
  TrainLoader(std::shared_ptr<const DetectionDataset> dataset, DatasetMapper mapper,
              TrainLoaderOptions options);
  /// The next batch of options().batch_size inputs (one aspect-ratio class when grouping).
  std::vector<structures::ModelInput> next_batch();
  const TrainLoaderOptions& options() const { return options_; }
  const DetectionDataset& dataset() const { return *dataset_; }
  /// Samples this loader has mapped (decoded and augmented) so far, prefetched ones included.
  uint64_t samples_mapped() const { return samples_mapped_.load(); }
  /// Samples whose image was bad and was replaced (DATALOADER.ON_BAD_IMAGE skip).
  uint64_t bad_images_replaced() const { return bad_images_.replaced(); }

 private:
  /// The next sample this rank maps: the next of its slice of the planned batches.
  StreamSample next_sample();
  structures::ModelInput map_sample(uint64_t position, size_t index);
  /// The image that stands in for bad image `index`: the next one in dataset order (wrapping) of
  /// the same aspect-ratio class, or of any class without grouping, not known to be bad.
  size_t substitute_for(size_t index, size_t original) const;
  /// The aspect-ratio class of a dataset index (its original size).
  int bucket_of(size_t index) const;

  std::shared_ptr<const DetectionDataset> dataset_;
  DatasetMapper mapper_;
  TrainLoaderOptions options_;
  std::atomic<uint64_t> samples_mapped_{0};
  BadImageTracker bad_images_;
  std::unique_ptr<Sampler> sampler_;
  std::unique_ptr<BatchPlanner> planner_;
  std::deque<StreamSample> planned_;       // this rank's samples of the batches planned so far
  std::unique_ptr<OrderedMapper> stream_;  // last: its threads use the members above
};

/// One image of a test pass.
struct InferenceSample {
  size_t index;      // in the dataset
  int64_t image_id;  // the file's image id, for writing results
  structures::ModelInput input;
};

/// One pass over this rank's shard of a dataset, in dataset order, one image at a time.
class TestLoader {
 public:
  TestLoader(std::shared_ptr<const DetectionDataset> dataset, DatasetMapper mapper, int num_workers,
             int rank = 0, int world_size = 1);
  /// The next image, nullopt after the last.
  std::optional<InferenceSample> next();
  /// Images in this rank's shard.
  size_t size() const { return shard_size_; }
  const DetectionDataset& dataset() const { return *dataset_; }

 private:
  std::shared_ptr<const DetectionDataset> dataset_;
  DatasetMapper mapper_;
  size_t shard_size_;
  std::unique_ptr<InferenceSampler> sampler_;
  std::unique_ptr<OrderedMapper> stream_;
};

/// Options from the config: SOLVER.IMS_PER_BATCH / world_size (must divide), DATALOADER.* (the
/// bad-image list in OUTPUT_DIR, WORLD_SIZE_INVARIANT),
/// and SEED (a random seed, logged, when negative; with world_size > 1 pass `seed` so every
/// rank uses the same one).
TrainLoaderOptions train_loader_options_from_config(const config::CfgNode& cfg, int rank = 0,
                                                    int world_size = 1,
                                                    std::optional<uint64_t> seed = std::nullopt);

/// DATASETS.TRAIN through the catalog (DATALOADER.FILTER_EMPTY_ANNOTATIONS), the training
/// DatasetMapper, and the options above, starting at batch `start_batch`.
std::unique_ptr<TrainLoader> build_detection_train_loader(
    const config::CfgNode& cfg, int rank = 0, int world_size = 1,
    std::optional<uint64_t> seed = std::nullopt, int64_t start_batch = 0);

/// `dataset_name` (one of DATASETS.TEST, say) unfiltered, the test-time DatasetMapper,
/// DATALOADER.NUM_WORKERS threads.
std::unique_ptr<TestLoader> build_detection_test_loader(const config::CfgNode& cfg,
                                                        const std::string& dataset_name,
                                                        int rank = 0, int world_size = 1);

}  // namespace detkit::data

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
// DATALOADER.NUM_WORKERS threads map samples into a bounded window (OrderedMapper); the index
// stream comes from the sampler and sample k of this rank (stream position
// rank + k * world_size) draws its augmentations from SampleRng(seed, position). So the batches
// depend on the seed only: 1 or 4 workers give identical batches. A loader made with
// start_batch N (a run resumed at iteration N) gives the batches N, N+1, ... of that stream
// without decoding an image of batches 0..N-1: the sampler is advanced and the aspect-ratio
// grouping replayed on the annotation file's image sizes. Destroying a loader stops and joins its
// threads; an exception in a worker is rethrown by next_batch()/next().
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "detkit/config/cfg_node.h"
#include "detkit/data/bad_images.h"
#include "detkit/data/dataset_mapper.h"
#include "detkit/data/detection_dataset.h"
#include "detkit/data/ordered_mapper.h"
#include "detkit/data/samplers/aspect_ratio_grouping.h"
#include "detkit/data/samplers/samplers.h"

namespace detkit::data {

struct TrainLoaderOptions {
  size_t batch_size = 2;  // images per batch on this rank
  int num_workers = 4;    // 0: map in the consumer's thread
  bool aspect_ratio_grouping = true;
  uint64_t seed = 0;  // sampler and augmentations; the same on every rank
  int rank = 0, world_size = 1;
  std::string sampler = "TrainingSampler";  // or "RepeatFactorTrainingSampler"
  double repeat_threshold = 0.0;            // RepeatFactorTrainingSampler only
  bool repeat_sqrt = true;
  int64_t start_batch = 0;  // batches already consumed (a resumed run's start iteration)
  /// DATALOADER.ON_BAD_IMAGE and what goes with it (data/bad_images.h). With kSkip a sample whose
  /// image is bad is replaced by the next image of the dataset in the same aspect-ratio class
  /// (any image without grouping) that is not bad, with the sample's own augmentation draws: the
  /// batches then depend on the seed and the files only, and a resumed run repeats them.
  BadImageOptions bad_images;
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
  /// Consumes options_.start_batch batches from the sampler without mapping; returns this rank's
  /// stream position after them and adds to the grouper the samples drawn for later batches.
  uint64_t fast_forward();
  structures::ModelInput map_sample(uint64_t position, size_t index);
  /// The image that stands in for bad image `index`: the next one in dataset order (wrapping) of
  /// the same aspect-ratio class, or of any class without grouping, not known to be bad.
  size_t substitute_for(size_t index, size_t original) const;

  std::shared_ptr<const DetectionDataset> dataset_;
  DatasetMapper mapper_;
  TrainLoaderOptions options_;
  std::atomic<uint64_t> samples_mapped_{0};
  BadImageTracker bad_images_;
  std::unique_ptr<Sampler> sampler_;
  std::optional<AspectRatioGrouper> grouper_;
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
/// bad-image list in OUTPUT_DIR),
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

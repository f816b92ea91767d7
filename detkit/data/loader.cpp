#include "detkit/data/loader.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <random>

#include "detkit/utils/error.h"

namespace detkit::data {
namespace {

// Positions claimed ahead of the consumer: two per worker (PyTorch's prefetch_factor), and at
// least a batch, so a batch is mapped in parallel.
size_t window(int num_workers, size_t batch_size) {
  return std::max<size_t>(2 * static_cast<size_t>(std::max(num_workers, 1)), batch_size);
}

}  // namespace

TrainLoader::TrainLoader(std::shared_ptr<const DetectionDataset> dataset, DatasetMapper mapper,
                         TrainLoaderOptions options)
    : dataset_(std::move(dataset)), mapper_(std::move(mapper)), options_(std::move(options)) {
  if (options_.batch_size == 0) throw Error("TrainLoader: batch size must be at least 1");
  if (options_.sampler == "TrainingSampler") {
    sampler_ = std::make_unique<TrainingSampler>(dataset_->size(), options_.seed, options_.rank,
                                                 options_.world_size);
  } else if (options_.sampler == "RepeatFactorTrainingSampler") {
    sampler_ = std::make_unique<RepeatFactorTrainingSampler>(
        repeat_factors_from_category_frequency(dataset_->image_categories(),
                                               options_.repeat_threshold, options_.repeat_sqrt),
        options_.seed, options_.rank, options_.world_size);
  } else {
    throw Error(
        "DATALOADER.SAMPLER_TRAIN must be 'TrainingSampler' or "
        "'RepeatFactorTrainingSampler', got '" +
        options_.sampler + "'");
  }
  if (options_.aspect_ratio_grouping) grouper_.emplace(options_.batch_size);
  const uint64_t seed = options_.seed;
  const uint64_t rank = options_.rank, world_size = options_.world_size;
  stream_ = std::make_unique<OrderedMapper>(
      [this] { return sampler_->next(); },
      [this, seed, rank, world_size](uint64_t k, size_t index) {
        SampleRng rng(seed, rank + k * world_size);
        DetectionDataset::Location loc = dataset_->at(index);
        return mapper_(*loc.dataset, loc.image_index, rng);
      },
      options_.num_workers, window(options_.num_workers, options_.batch_size));
}

std::vector<structures::ModelInput> TrainLoader::next_batch() {
  std::vector<structures::ModelInput> batch;
  while (true) {
    std::optional<MappedSample> sample = stream_->next();
    if (!sample) throw Error("TrainLoader: the training sampler ended");
    if (grouper_) {
      if (auto full = grouper_->add(std::move(sample->input))) return std::move(*full);
      continue;
    }
    batch.push_back(std::move(sample->input));
    if (batch.size() == options_.batch_size) return batch;
  }
}

TestLoader::TestLoader(std::shared_ptr<const DetectionDataset> dataset, DatasetMapper mapper,
                       int num_workers, int rank, int world_size)
    : dataset_(std::move(dataset)), mapper_(std::move(mapper)) {
  sampler_ = std::make_unique<InferenceSampler>(dataset_->size(), rank, world_size);
  shard_size_ = sampler_->shard_size();
  stream_ = std::make_unique<OrderedMapper>(
      [this] { return sampler_->next(); },
      [this](uint64_t k, size_t index) {
        SampleRng rng(0, k);  // test-time augmentations draw nothing that varies
        DetectionDataset::Location loc = dataset_->at(index);
        return mapper_(*loc.dataset, loc.image_index, rng);
      },
      num_workers, window(num_workers, 1));
}

std::optional<InferenceSample> TestLoader::next() {
  std::optional<MappedSample> sample = stream_->next();
  if (!sample) return std::nullopt;
  DetectionDataset::Location loc = dataset_->at(sample->index);
  return InferenceSample{sample->index, loc.dataset->image(loc.image_index).id,
                         std::move(sample->input)};
}

TrainLoaderOptions train_loader_options_from_config(const config::CfgNode& cfg, int rank,
                                                    int world_size, std::optional<uint64_t> seed) {
  TrainLoaderOptions options;
  const int64_t total = cfg.get_int("SOLVER.IMS_PER_BATCH");
  if (world_size < 1 || total <= 0 || total % world_size != 0) {
    throw Error("SOLVER.IMS_PER_BATCH (" + std::to_string(total) +
                ") must be a positive multiple of the number of workers (" +
                std::to_string(world_size) + ")");
  }
  options.batch_size = static_cast<size_t>(total / world_size);
  options.num_workers = static_cast<int>(cfg.get_int("DATALOADER.NUM_WORKERS"));
  options.aspect_ratio_grouping = cfg.get_bool("DATALOADER.ASPECT_RATIO_GROUPING");
  options.sampler = cfg.get_string("DATALOADER.SAMPLER_TRAIN");
  options.repeat_threshold = cfg.get_float("DATALOADER.REPEAT_THRESHOLD");
  options.repeat_sqrt = cfg.get_bool("DATALOADER.REPEAT_SQRT");
  options.rank = rank;
  options.world_size = world_size;
  if (seed) {
    options.seed = *seed;
  } else if (cfg.get_int("SEED") >= 0) {
    options.seed = static_cast<uint64_t>(cfg.get_int("SEED"));
  } else {
    if (world_size > 1) {
      throw Error(
          "SEED is negative: with several workers the data loader needs one seed shared "
          "by all ranks; set SEED or pass it");
    }
    std::random_device device;
    options.seed = (static_cast<uint64_t>(device()) << 32) ^ device();
    spdlog::info("data loader: SEED is negative; using random seed {}", options.seed);
  }
  return options;
}

std::unique_ptr<TrainLoader> build_detection_train_loader(const config::CfgNode& cfg, int rank,
                                                          int world_size,
                                                          std::optional<uint64_t> seed) {
  TrainLoaderOptions options = train_loader_options_from_config(cfg, rank, world_size, seed);
  auto dataset = std::make_shared<const DetectionDataset>(get_detection_dataset(
      cfg.get_string_list("DATASETS.TRAIN"), cfg.get_bool("DATALOADER.FILTER_EMPTY_ANNOTATIONS")));
  return std::make_unique<TrainLoader>(
      std::move(dataset), DatasetMapper(dataset_mapper_options_from_config(cfg, true)), options);
}

std::unique_ptr<TestLoader> build_detection_test_loader(const config::CfgNode& cfg,
                                                        const std::string& dataset_name, int rank,
                                                        int world_size) {
  auto dataset =
      std::make_shared<const DetectionDataset>(get_detection_dataset({dataset_name}, false));
  return std::make_unique<TestLoader>(
      std::move(dataset), DatasetMapper(dataset_mapper_options_from_config(cfg, false)),
      static_cast<int>(cfg.get_int("DATALOADER.NUM_WORKERS")), rank, world_size);
}

}  // namespace detkit::data

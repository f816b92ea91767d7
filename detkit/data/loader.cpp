#include "detkit/data/loader.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
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
    : dataset_(std::move(dataset)),
      mapper_(std::move(mapper)),
      options_(std::move(options)),
      bad_images_(options_.bad_images) {
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
  if (options_.start_batch < 0)
    throw Error("TrainLoader: start batch must not be negative, got " +
                std::to_string(options_.start_batch));
  const uint64_t start = fast_forward();
  stream_ = std::make_unique<OrderedMapper>(
      [this] { return sampler_->next(); },
      [this, start](uint64_t k, size_t index) { return map_sample(start + k, index); },
      options_.num_workers, window(options_.num_workers, options_.batch_size));
}

structures::ModelInput TrainLoader::map_sample(uint64_t position, size_t index) {
  const size_t original = index;
  while (true) {
    // Every attempt draws from the sample's own stream position: a substitute is augmented as
    // the image it replaces would have been.
    SampleRng rng(options_.seed, options_.rank + position * options_.world_size);
    DetectionDataset::Location loc = dataset_->at(index);
    ++samples_mapped_;
    bad_images_.count_read();
    try {
      return mapper_(*loc.dataset, loc.image_index, rng);
    } catch (const BadImage& bad) {
      bad_images_.record(index, bad);           // throws with ON_BAD_IMAGE error, or too many bad
      index = substitute_for(index, original);  // throws when none is left
    }
  }
}

size_t TrainLoader::substitute_for(size_t index, size_t original) const {
  auto bucket = [&](size_t i) {
    const DetectionDataset::Location loc = dataset_->at(i);
    const ImageView image = loc.dataset->image(loc.image_index);
    return AspectRatioGrouper::bucket_of(image.height, image.width);
  };
  const size_t n = dataset_->size();
  const int wanted = grouper_ ? bucket(original) : 0;
  for (size_t step = 1; step < n; ++step) {
    const size_t candidate = (index + step) % n;
    if (candidate == original || bad_images_.known_bad(candidate)) continue;
    if (!grouper_ || bucket(candidate) == wanted) return candidate;
  }
  throw Error("every image that could replace a bad one is bad (" + std::to_string(n) +
              " images in the training set); the list is in " +
              (options_.bad_images.list_file.empty() ? std::string("the warnings")
                                                     : options_.bad_images.list_file));
}

uint64_t TrainLoader::fast_forward() {
  if (options_.start_batch == 0) return 0;
  // next_batch()'s grouping, on (position, index) pairs and the annotation file's image sizes
  // (the sizes the mapper puts in ModelInput::height/width and the grouper reads).
  std::array<std::vector<std::pair<uint64_t, size_t>>, 2> buckets;
  uint64_t position = 0;
  for (int64_t batch = 0; batch < options_.start_batch; ++position) {
    const std::optional<size_t> index = sampler_->next();
    if (!index) throw Error("TrainLoader: the training sampler ended");
    int bucket = 0;
    if (grouper_) {
      const DetectionDataset::Location loc = dataset_->at(*index);
      const ImageView image = loc.dataset->image(loc.image_index);
      bucket = AspectRatioGrouper::bucket_of(image.height, image.width);
    }
    buckets[bucket].emplace_back(position, *index);
    if (buckets[bucket].size() == options_.batch_size) {
      buckets[bucket].clear();
      ++batch;
    }
  }
  // Samples drawn before the start but batched after it wait in the grouper, in stream order.
  std::vector<std::pair<uint64_t, size_t>> waiting = buckets[0];
  waiting.insert(waiting.end(), buckets[1].begin(), buckets[1].end());
  std::sort(waiting.begin(), waiting.end());
  for (const auto& [p, index] : waiting) grouper_->add(map_sample(p, index));
  spdlog::info(
      "Data loader: starting at batch {}: {} samples drawn and not decoded, apart from "
      "the {} that belong to later batches",
      options_.start_batch, position, waiting.size());
  return position;
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
  options.bad_images = bad_image_options_from_config(cfg, rank);
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
                                                          std::optional<uint64_t> seed,
                                                          int64_t start_batch) {
  TrainLoaderOptions options = train_loader_options_from_config(cfg, rank, world_size, seed);
  options.start_batch = start_batch;
  auto dataset = std::make_shared<const DetectionDataset>(get_detection_dataset(
      cfg.get_string_list("DATASETS.TRAIN"), train_load_options_from_config(cfg)));
  return std::make_unique<TrainLoader>(
      std::move(dataset), DatasetMapper(dataset_mapper_options_from_config(cfg, true)), options);
}

std::unique_ptr<TestLoader> build_detection_test_loader(const config::CfgNode& cfg,
                                                        const std::string& dataset_name, int rank,
                                                        int world_size) {
  auto dataset = std::make_shared<const DetectionDataset>(get_detection_dataset({dataset_name}));
  return std::make_unique<TestLoader>(
      std::move(dataset), DatasetMapper(dataset_mapper_options_from_config(cfg, false)),
      static_cast<int>(cfg.get_int("DATALOADER.NUM_WORKERS")), rank, world_size);
}

}  // namespace detkit::data

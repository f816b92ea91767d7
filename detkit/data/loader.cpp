#include "detkit/data/loader.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <random>

#include "detkit/data/transforms/sample_rng.h"
#include "detkit/utils/cuda_build.h"
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
  if (options_.world_size < 1 || options_.rank < 0 || options_.rank >= options_.world_size)
    throw Error("TrainLoader: rank " + std::to_string(options_.rank) +
                " is not within world size " + std::to_string(options_.world_size));
  if (options_.start_batch < 0)
    throw Error("TrainLoader: start batch must not be negative, got " +
                std::to_string(options_.start_batch));
  // World-size invariant: every rank draws the whole stream and plans global batches;
  // Detectron2's: this rank's shard of the stream, planned into batches of its own.
  const bool global = options_.world_size_invariant;
  const int shard_rank = global ? 0 : options_.rank, shards = global ? 1 : options_.world_size;
  if (options_.sampler == "TrainingSampler") {
    sampler_ = std::make_unique<TrainingSampler>(dataset_->size(), options_.seed, shard_rank, shards);
  } else if (options_.sampler == "RepeatFactorTrainingSampler") {
    sampler_ = std::make_unique<RepeatFactorTrainingSampler>(
        repeat_factors_from_category_frequency(dataset_->image_categories(),
                                               options_.repeat_threshold, options_.repeat_sqrt),
        options_.seed, shard_rank, shards);
  } else {
    throw Error(
        "DATALOADER.SAMPLER_TRAIN must be 'TrainingSampler' or "
        "'RepeatFactorTrainingSampler', got '" +
        options_.sampler + "'");
  }
  BatchPlanner::BucketOf bucket;
  if (options_.aspect_ratio_grouping) bucket = [this](size_t index) { return bucket_of(index); };
  planner_ = std::make_unique<BatchPlanner>(
      *sampler_, global ? options_.batch_size * options_.world_size : options_.batch_size,
      std::move(bucket), static_cast<uint64_t>(shard_rank), static_cast<uint64_t>(shards));
  for (int64_t b = 0; b < options_.start_batch; ++b) planner_->next();
  if (options_.start_batch > 0)
    spdlog::info("Data loader: starting at batch {}: {} samples drawn and not decoded",
                 options_.start_batch, planner_->drawn());
  stream_ = std::make_unique<OrderedMapper>(
      [this] { return next_sample(); },
      [this](uint64_t position, size_t index) { return map_sample(position, index); },
      options_.num_workers, window(options_.num_workers, options_.batch_size));
}

StreamSample TrainLoader::next_sample() {
  if (planned_.empty()) {
    std::vector<StreamSample> batch = planner_->next();
    const size_t first = options_.world_size_invariant
                             ? static_cast<size_t>(options_.rank) * options_.batch_size
                             : 0;
    planned_.insert(planned_.end(), batch.begin() + first,
                    batch.begin() + first + options_.batch_size);
  }
  const StreamSample sample = planned_.front();
  planned_.pop_front();
  return sample;
}

int TrainLoader::bucket_of(size_t index) const {
  const DetectionDataset::Location loc = dataset_->at(index);
  const ImageView image = loc.dataset->image(loc.image_index);
  return BatchPlanner::bucket_of(image.height, image.width);
}

structures::ModelInput TrainLoader::map_sample(uint64_t position, size_t index) {
  const size_t original = index;
  while (true) {
    // Every attempt draws from the sample's own stream position: a substitute is augmented as
    // the image it replaces would have been.
    SampleRng rng(options_.seed, position);
    DetectionDataset::Location loc = dataset_->at(index);
    ++samples_mapped_;
    bad_images_.count_read();
    try {
      structures::ModelInput input = mapper_(*loc.dataset, loc.image_index, rng);
      input.sampling_seed = model_sampling_seed(options_.seed, position);
      if (options_.pin_memory) input.image = input.image.pin_memory();
      return input;
    } catch (const BadImage& bad) {
      bad_images_.record(index, bad);           // throws with ON_BAD_IMAGE error, or too many bad
      index = substitute_for(index, original);  // throws when none is left
    }
  }
}

size_t TrainLoader::substitute_for(size_t index, size_t original) const {
  const size_t n = dataset_->size();
  const bool grouping = options_.aspect_ratio_grouping;
  const int wanted = grouping ? bucket_of(original) : 0;
  for (size_t step = 1; step < n; ++step) {
    const size_t candidate = (index + step) % n;
    if (candidate == original || bad_images_.known_bad(candidate)) continue;
    if (!grouping || bucket_of(candidate) == wanted) return candidate;
  }
  throw Error("every image that could replace a bad one is bad (" + std::to_string(n) +
              " images in the training set); the list is in " +
              (options_.bad_images.list_file.empty() ? std::string("the warnings")
                                                     : options_.bad_images.list_file));
}

std::vector<structures::ModelInput> TrainLoader::next_batch() {
  std::vector<structures::ModelInput> batch;
  while (batch.size() < options_.batch_size) {
    std::optional<MappedSample> sample = stream_->next();
    if (!sample) throw Error("TrainLoader: the training sampler ended");
    batch.push_back(std::move(sample->input));
  }
  return batch;
}

TestLoader::TestLoader(std::shared_ptr<const DetectionDataset> dataset, DatasetMapper mapper,
                       int num_workers, int rank, int world_size)
    : dataset_(std::move(dataset)), mapper_(std::move(mapper)) {
  sampler_ = std::make_unique<InferenceSampler>(dataset_->size(), rank, world_size);
  shard_size_ = sampler_->shard_size();
  stream_ = std::make_unique<OrderedMapper>(
      [this, k = uint64_t{0}]() mutable -> std::optional<StreamSample> {
        const std::optional<size_t> index = sampler_->next();
        if (!index) return std::nullopt;
        return StreamSample{k++, *index};
      },
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
  options.world_size_invariant = cfg.get_bool("DATALOADER.WORLD_SIZE_INVARIANT");
  options.bad_images = bad_image_options_from_config(cfg, rank);
  options.pin_memory =
      cfg.get_string("MODEL.DEVICE").rfind("cuda", 0) == 0 && visible_gpu_count() > 0;
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
  DatasetMapperOptions mapper = dataset_mapper_options_from_config(cfg, true);
  mapper.proposals = proposal_table_from_config(cfg, *dataset, /*is_train=*/true);
  mapper.proposal_topk = cfg.get_int("DATASETS.PRECOMPUTED_PROPOSAL_TOPK_TRAIN");
  return std::make_unique<TrainLoader>(std::move(dataset), DatasetMapper(std::move(mapper)),
                                       options);
}

std::unique_ptr<TestLoader> build_detection_test_loader(const config::CfgNode& cfg,
                                                        const std::string& dataset_name, int rank,
                                                        int world_size) {
  auto dataset = std::make_shared<const DetectionDataset>(get_detection_dataset({dataset_name}));
  DatasetMapperOptions mapper = dataset_mapper_options_from_config(cfg, false);
  mapper.proposals = proposal_table_from_config(cfg, *dataset, /*is_train=*/false, dataset_name);
  mapper.proposal_topk = cfg.get_int("DATASETS.PRECOMPUTED_PROPOSAL_TOPK_TEST");
  return std::make_unique<TestLoader>(std::move(dataset), DatasetMapper(std::move(mapper)),
                                      static_cast<int>(cfg.get_int("DATALOADER.NUM_WORKERS")), rank,
                                      world_size);
}

}  // namespace detkit::data

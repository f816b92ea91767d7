// The threaded loaders: batches depend on the seed only (not on the number of workers), grouping
// by aspect ratio, early stop, a worker's exception, bad images (skipped or an error), the test
// loader's shards, config wiring.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <tuple>

#include "detkit/config/defaults.h"
#include "detkit/data/catalog.h"
#include "detkit/data/loader.h"
#include "detkit/data/transforms/sample_rng.h"
#include "detkit/utils/error.h"
#include "tests/data/mapper_test_files.h"

namespace detkit::data {
namespace {

using structures::ModelInput;
using testing::coco_annotation;
using testing::coco_image;

// 8 images: ids 1..4 wide (32x48), 5..8 tall (48x32), one or two boxes each; image `missing`
// (if nonzero) is listed but not written.
std::shared_ptr<const DetectionDataset> small_dataset(const testing::TempDir& dir,
                                                      int missing = 0) {
  std::string images, annotations;
  for (int id = 1; id <= 8; ++id) {
    const bool wide = id <= 4;
    const int h = wide ? 32 : 48, w = wide ? 48 : 32;
    const std::string name = "img" + std::to_string(id) + ".png";
    if (id != missing) testing::write_image(dir, name, testing::gradient_image(h, w, id * 17));
    images += (id > 1 ? ", " : "") + coco_image(id, name, h, w);
    annotations +=
        (id > 1 ? ", " : "") +
        coco_annotation(10 * id, id, 1, "", "[2.5, 3.25, 10, " + std::to_string(id) + "]");
    if (id % 2 == 0) annotations += ", " + coco_annotation(10 * id + 1, id, 3, "", "[20, 5, 7, 9]");
  }
  auto dataset = std::make_shared<CocoDataset>(testing::write_and_load(dir, images, annotations));
  return std::make_shared<const DetectionDataset>(
      std::vector<std::shared_ptr<const CocoDataset>>{dataset}, std::vector<std::string>{"small"});
}

DatasetMapper augmenting_mapper() {
  DatasetMapperOptions o;
  o.augmentations = {std::make_shared<ResizeShortestEdge>(std::vector<int64_t>{24, 40}, 100,
                                                          ResizeShortestEdge::SampleStyle::kRange),
                     std::make_shared<RandomFlip>(0.5, true, false)};
  return DatasetMapper(o);
}

std::vector<std::vector<ModelInput>> pull(TrainLoader& loader, int num_batches) {
  std::vector<std::vector<ModelInput>> out;
  for (int b = 0; b < num_batches; ++b) out.push_back(loader.next_batch());
  return out;
}

std::vector<std::vector<ModelInput>> run(const std::shared_ptr<const DetectionDataset>& dataset,
                                         int num_workers, uint64_t seed, int num_batches = 6) {
  TrainLoaderOptions o;
  o.batch_size = 2;
  o.num_workers = num_workers;
  o.seed = seed;
  TrainLoader loader(dataset, augmenting_mapper(), o);
  return pull(loader, num_batches);
}

// The message of the first error next_batch() raises within `max_batches` batches ("" if none).
std::string first_error(TrainLoader& loader, int max_batches) {
  for (int b = 0; b < max_batches; ++b) {
    try {
      loader.next_batch();
    } catch (const Error& e) {
      return e.what();
    }
  }
  return "";
}

bool same_input(const ModelInput& a, const ModelInput& b) {
  return a.height == b.height && a.width == b.width && at::equal(a.image, b.image) &&
         at::equal(a.instances->boxes("gt_boxes").tensor(),
                   b.instances->boxes("gt_boxes").tensor()) &&
         at::equal(a.instances->tensor("gt_classes"), b.instances->tensor("gt_classes"));
}

bool same_batches(const std::vector<std::vector<ModelInput>>& a,
                  const std::vector<std::vector<ModelInput>>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].size() != b[i].size()) return false;
    for (size_t k = 0; k < a[i].size(); ++k) {
      if (!same_input(a[i][k], b[i][k])) return false;
    }
  }
  return true;
}

TEST(TrainLoader, BatchesDependOnTheSeedOnly) {
  testing::TempDir dir("loader_determinism");
  auto dataset = small_dataset(dir);
  const auto one_worker = run(dataset, 1, 5);
  const auto four_workers = run(dataset, 4, 5);
  const auto four_again = run(dataset, 4, 5);
  const auto in_thread = run(dataset, 0, 5);
  const auto other_seed = run(dataset, 4, 6);
  EXPECT_TRUE(same_batches(one_worker, four_workers));
  EXPECT_TRUE(same_batches(four_workers, four_again));
  EXPECT_TRUE(same_batches(one_worker, in_thread));
  EXPECT_FALSE(same_batches(four_workers, other_seed));
  // The augmentations did vary: more than one image size among the batches.
  std::set<int64_t> widths;
  for (const auto& batch : one_worker) {
    for (const auto& input : batch) widths.insert(input.image.size(2));
  }
  EXPECT_GT(widths.size(), 1u);
}

TEST(TrainLoader, GroupsBatchesByAspectRatio) {
  testing::TempDir dir("loader_grouping");
  for (const auto& batch : run(small_dataset(dir), 2, 9, 10)) {
    ASSERT_EQ(batch.size(), 2u);
    EXPECT_EQ(batch[0].width > batch[0].height, batch[1].width > batch[1].height);
    for (const auto& input : batch) {
      // The image follows its original orientation; targets live in the resized frame.
      EXPECT_EQ(input.image.size(2) > input.image.size(1), input.width > input.height);
      EXPECT_EQ(input.instances->image_width(), input.image.size(2));
    }
  }
}

TEST(TrainLoader, StoppingEarlyJoinsTheWorkers) {
  testing::TempDir dir("loader_stop");
  auto dataset = small_dataset(dir);
  TrainLoaderOptions o;
  o.num_workers = 4;
  { TrainLoader never_read(dataset, augmenting_mapper(), o); }
  TrainLoader loader(dataset, augmenting_mapper(), o);
  EXPECT_EQ(loader.next_batch().size(), 2u);
  // Leaving the scope destroys the loader with its workers blocked on a full window.
}

TEST(TrainLoader, WorkerExceptionReachesTheConsumer) {
  testing::TempDir dir("loader_error");
  auto dataset = small_dataset(dir, /*missing=*/3);
  TrainLoaderOptions o;
  o.num_workers = 3;
  o.bad_images.on_bad_image = OnBadImage::kError;  // Detectron2's behaviour
  TrainLoader loader(dataset, augmenting_mapper(), o);
  // The sampler visits every image within the first epoch (8 images: at most 8 batches).
  const std::string message = first_error(loader, 8);
  EXPECT_NE(message.find("img3.png: image file not found"), std::string::npos) << message;
  EXPECT_NE(message.find("(image id 3, annotation ids 30)"), std::string::npos) << message;
}

// A loader started at batch N (a resumed run) gives batches N, N+1, ... of the uninterrupted
// stream: same images, same augmentations, same aspect-ratio grouping.
TEST(TrainLoader, StartingAtBatchNContinuesTheSameStream) {
  testing::TempDir dir("loader_start");
  auto dataset = small_dataset(dir);
  constexpr int kTotal = 14;  // almost four epochs of 8 images
  for (bool grouping : {true, false}) {
    for (int workers : {0, 2}) {
      TrainLoaderOptions o;
      o.batch_size = 3;
      o.num_workers = workers;
      o.seed = 11;
      o.aspect_ratio_grouping = grouping;
      TrainLoader straight(dataset, augmenting_mapper(), o);
      const auto all = pull(straight, kTotal);
      for (int start : {1, 2, 5, 8, 13}) {
        o.start_batch = start;
        TrainLoader resumed(dataset, augmenting_mapper(), o);
        const std::vector<std::vector<ModelInput>> tail(all.begin() + start, all.end());
        EXPECT_TRUE(same_batches(pull(resumed, kTotal - start), tail))
            << "start " << start << ", grouping " << grouping << ", workers " << workers;
      }
    }
  }
}

// Resuming at batch N decodes no image of batches 0..N-1: without grouping, the images at stream
// positions before N * batch_size are deleted and the resumed loader never asks for them (the
// replay it replaces would have failed on the first). With grouping too it maps only what its
// batches use: batches are planned on image sizes, so samples drawn early for a later batch wait
// undecoded.
TEST(TrainLoader, StartingAtBatchNDecodesNoImageOfEarlierBatches) {
  testing::TempDir dir("loader_start_nodecode");
  auto dataset = small_dataset(dir);
  TrainLoaderOptions o;
  o.batch_size = 2;
  o.num_workers = 0;  // no prefetching: what is mapped is what the batches need
  o.seed = 4;
  o.aspect_ratio_grouping = false;
  o.start_batch = 3;
  TrainingSampler order(dataset->size(), o.seed);
  for (int position = 0; position < 6; ++position) {  // batches 0..2 of the first epoch
    const auto loc = dataset->at(*order.next());
    std::filesystem::remove(
        dir.path("images/" + std::string(loc.dataset->image(loc.image_index).file_name)));
  }
  TrainLoader resumed(dataset, augmenting_mapper(), o);
  EXPECT_EQ(resumed.samples_mapped(), 0u);
  EXPECT_EQ(resumed.next_batch().size(), 2u);  // positions 6 and 7: images that still exist
  EXPECT_EQ(resumed.samples_mapped(), 2u);

  o.start_batch = 0;
  o.bad_images.on_bad_image = OnBadImage::kError;
  TrainLoader replaying(dataset, augmenting_mapper(), o);
  EXPECT_THROW(replaying.next_batch(), Error);  // the files of batch 0 are gone
  o.bad_images.on_bad_image = OnBadImage::kSkip;

  // With grouping: mapped = what the batches from N on use; the uninterrupted loader maps
  // everything before N as well.
  testing::TempDir dir2("loader_start_grouped");
  auto intact = small_dataset(dir2);
  o.aspect_ratio_grouping = true;
  o.start_batch = 0;
  TrainLoader straight(intact, augmenting_mapper(), o);
  pull(straight, 6);
  const uint64_t before = straight.samples_mapped();
  pull(straight, 3);
  const uint64_t used_after = straight.samples_mapped() - before;
  o.start_batch = 6;
  TrainLoader grouped(intact, augmenting_mapper(), o);
  pull(grouped, 3);
  EXPECT_EQ(grouped.samples_mapped(), used_after);
  EXPECT_LT(grouped.samples_mapped(), straight.samples_mapped());
  std::cout << "[ loader ] resumed at batch 6: mapped " << grouped.samples_mapped()
            << " samples for 3 batches; the uninterrupted loader mapped "
            << straight.samples_mapped() << "\n";
}

// World-size invariant (the default): rank r's batch is slice r of the batch one process would
// make of the same global batch size — the same images, augmentations, grouping and sampling
// seeds — at world sizes 1, 2 and 4, with grouping and without, and from a resumed start.
TEST(TrainLoader, EachRanksBatchIsItsSliceOfTheOneProcessBatch) {
  testing::TempDir dir("loader_global");
  auto dataset = small_dataset(dir);
  constexpr int kBatches = 9;  // more than two epochs of 8 images
  for (bool grouping : {true, false}) {
    for (int64_t start : {0, 3}) {
      auto options = [&](int rank, int world) {
        TrainLoaderOptions o;
        o.batch_size = 4 / world;
        o.num_workers = rank % 2;  // in-thread and threaded mapping mixed
        o.seed = 21;
        o.rank = rank;
        o.world_size = world;
        o.aspect_ratio_grouping = grouping;
        o.start_batch = start;
        return o;
      };
      TrainLoader one(dataset, augmenting_mapper(), options(0, 1));
      const auto whole = pull(one, kBatches);
      for (int world : {2, 4}) {
        std::vector<std::vector<std::vector<ModelInput>>> ranks;
        for (int rank = 0; rank < world; ++rank) {
          TrainLoader loader(dataset, augmenting_mapper(), options(rank, world));
          ranks.push_back(pull(loader, kBatches));
        }
        for (int b = 0; b < kBatches; ++b) {
          std::vector<ModelInput> joined;
          for (const auto& rank : ranks) joined.insert(joined.end(), rank[b].begin(), rank[b].end());
          ASSERT_EQ(joined.size(), whole[b].size());
          for (size_t k = 0; k < joined.size(); ++k) {
            EXPECT_TRUE(same_input(joined[k], whole[b][k]))
                << "world " << world << ", batch " << b << ", image " << k << ", grouping "
                << grouping << ", start " << start;
            ASSERT_TRUE(joined[k].sampling_seed.has_value());
            EXPECT_EQ(joined[k].sampling_seed, whole[b][k].sampling_seed);
          }
        }
      }
    }
  }
}

// Every sample's model seed is the one of its stream position, so no two samples of a run share
// one; Detectron2's sharding (WORLD_SIZE_INVARIANT False) gives rank r the stream positions r,
// r + world_size, ... grouped into batches of its own.
TEST(TrainLoader, SamplingSeedsFollowStreamPositionsAndShardsInterleave) {
  testing::TempDir dir("loader_shards");
  auto dataset = small_dataset(dir);
  TrainLoaderOptions o;
  o.batch_size = 2;
  o.num_workers = 0;
  o.seed = 8;
  o.aspect_ratio_grouping = false;
  TrainLoader one(dataset, augmenting_mapper(), o);
  const auto whole = pull(one, 6);
  std::set<uint64_t> seeds;
  for (int b = 0; b < 6; ++b)
    for (int k = 0; k < 2; ++k) {
      EXPECT_EQ(*whole[b][k].sampling_seed, model_sampling_seed(8, 2 * b + k));
      seeds.insert(*whole[b][k].sampling_seed);
    }
  EXPECT_EQ(seeds.size(), 12u);
  o.rank = 2;
  o.world_size = 2;
  EXPECT_THROW(TrainLoader(dataset, augmenting_mapper(), o), Error);  // no slice 2 of 2
  o.world_size_invariant = false;
  o.world_size = 2;
  o.batch_size = 1;
  for (int rank = 0; rank < 2; ++rank) {
    o.rank = rank;
    TrainLoader shard(dataset, augmenting_mapper(), o);
    for (int b = 0; b < 6; ++b) {  // batch b of rank r: stream position r + 2b
      const ModelInput mine = shard.next_batch()[0];
      const ModelInput& same = whole[b][rank];
      EXPECT_TRUE(same_input(mine, same)) << "rank " << rank << ", batch " << b;
      EXPECT_EQ(mine.sampling_seed, same.sampling_seed);
    }
  }
}

// Damages three images of small_dataset: img3 removed, img6 truncated (half its bytes), img2
// replaced by an image of another size than the annotation file says.
void damage_three_images(const testing::TempDir& dir) {
  namespace fs = std::filesystem;
  fs::remove(dir.path("images/img3.png"));
  const std::string six = dir.path("images/img6.png");
  fs::resize_file(six, fs::file_size(six) / 2);
  testing::write_image(dir, "img2.png", testing::gradient_image(20, 20, 1));
}

TrainLoaderOptions skipping(const testing::TempDir& dir, int workers) {
  TrainLoaderOptions o;
  o.batch_size = 2;
  o.num_workers = workers;
  o.seed = 5;
  o.bad_images.list_file = dir.path("out/bad_images.txt");
  std::filesystem::create_directories(dir.path("out"));
  return o;
}

std::vector<std::string> lines_of(const std::string& file) {
  std::vector<std::string> lines;
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// ON_BAD_IMAGE skip: every batch stays full, each bad file is listed once with why, and the
// replacements depend on the files only, so a loader started at batch N (a resumed run) gives
// exactly the batches of the uninterrupted one.
TEST(TrainLoader, SkipReplacesBadImagesAndResumesExactly) {
  testing::TempDir dir("loader_bad_skip");
  auto dataset = small_dataset(dir);
  damage_three_images(dir);
  constexpr int kTotal = 16;  // four epochs: every bad image is met several times
  for (int workers : {0, 3}) {
    std::filesystem::remove(dir.path("out/bad_images.txt"));
    TrainLoaderOptions o = skipping(dir, workers);
    TrainLoader straight(dataset, augmenting_mapper(), o);
    const auto all = pull(straight, kTotal);
    for (const auto& batch : all) EXPECT_EQ(batch.size(), 2u);
    EXPECT_GE(straight.bad_images_replaced(), 6u) << "each bad image is drawn about twice";
    const std::vector<std::string> listed = lines_of(o.bad_images.list_file);
    ASSERT_EQ(listed.size(), 3u) << "each bad file once";
    std::string text;
    for (const auto& line : listed) text += line + "\n";
    std::cout << "[ bad images ] " << workers << " workers, " << straight.bad_images_replaced()
              << " samples replaced; listed:\n"
              << text;
    EXPECT_NE(text.find("img3.png: image file not found or not readable (image id 3, annotation "
                        "ids 30)"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("img6.png: "), std::string::npos) << text;
    EXPECT_NE(text.find("img2.png: decoded image is 20x20 (width x height) but"), std::string::npos)
        << text;
    EXPECT_NE(text.find("(image id 2, annotation ids 20, 21)"), std::string::npos) << text;
    for (int start : {3, 7}) {
      o.start_batch = start;
      TrainLoader resumed(dataset, augmenting_mapper(), o);
      const std::vector<std::vector<ModelInput>> tail(all.begin() + start, all.end());
      EXPECT_TRUE(same_batches(pull(resumed, kTotal - start), tail))
          << "start " << start << ", workers " << workers;
    }
  }
}

TEST(TrainLoader, TooManyBadImagesStopWithTheShareNamed) {
  testing::TempDir dir("loader_bad_fraction");
  auto dataset = small_dataset(dir);
  damage_three_images(dir);
  TrainLoaderOptions o = skipping(dir, 0);
  o.bad_images.max_fraction = 0.1;
  o.bad_images.min_reads_for_fraction = 20;
  TrainLoader loader(dataset, augmenting_mapper(), o);
  const std::string message = first_error(loader, 40);
  std::cout << "[ bad images ] " << message << "\n";
  EXPECT_NE(message.find("distinct files, listed in " + o.bad_images.list_file +
                         "), more than DATALOADER.MAX_BAD_IMAGE_FRACTION 0.1"),
            std::string::npos)
      << message;
}

TEST(TrainLoader, NoGoodImageLeftToStandInIsAnError) {
  testing::TempDir dir("loader_bad_all");
  auto dataset = small_dataset(dir);
  for (int id = 1; id <= 4; ++id)  // every wide image
    std::filesystem::remove(dir.path("images/img" + std::to_string(id) + ".png"));
  TrainLoaderOptions o = skipping(dir, 0);
  o.bad_images.max_fraction = 1.0;
  TrainLoader loader(dataset, augmenting_mapper(), o);
  const std::string message = first_error(loader, 8);
  EXPECT_NE(message.find("every image that could replace a bad one is bad (8 images in the "
                         "training set); the list is in " +
                         o.bad_images.list_file),
            std::string::npos)
      << message;
}

TEST(BadImageOptions, ReadFromTheConfigWithTheKeyNamedInErrors) {
  config::CfgNode cfg = config::get_cfg();
  cfg.merge_from_list({"OUTPUT_DIR", "/tmp/run"});
  EXPECT_EQ(bad_image_options_from_config(cfg, 0).on_bad_image, OnBadImage::kSkip);
  EXPECT_EQ(bad_image_options_from_config(cfg, 0).max_fraction, 0.05);
  EXPECT_EQ(bad_image_options_from_config(cfg, 0).list_file, "/tmp/run/bad_images.txt");
  EXPECT_EQ(bad_image_options_from_config(cfg, 2).list_file, "/tmp/run/bad_images.txt.rank2");
  cfg.merge_from_list({"DATALOADER.ON_BAD_IMAGE", "error"});
  EXPECT_EQ(bad_image_options_from_config(cfg, 0).on_bad_image, OnBadImage::kError);
  for (auto [key, value, expected] :
       {std::tuple{"DATALOADER.ON_BAD_IMAGE", "ignore",
                   "DATALOADER.ON_BAD_IMAGE must be 'error' or 'skip', got 'ignore'"},
        std::tuple{"DATALOADER.MAX_BAD_IMAGE_FRACTION", "1.5",
                   "DATALOADER.MAX_BAD_IMAGE_FRACTION must be in 0..1, got 1.5"}}) {
    config::CfgNode bad = config::get_cfg();
    bad.merge_from_list({key, value});
    try {
      bad_image_options_from_config(bad, 0);
      ADD_FAILURE() << key << " " << value << " accepted";
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()), expected);
    }
  }
}

TEST(TestLoader, ShardsVisitEveryImageOnceInOrder) {
  testing::TempDir dir("loader_test");
  auto dataset = small_dataset(dir);
  DatasetMapperOptions o;
  o.is_train = false;
  o.augmentations = {std::make_shared<ResizeShortestEdge>(std::vector<int64_t>{64}, 100)};
  std::vector<int64_t> ids;
  for (int rank = 0; rank < 3; ++rank) {
    TestLoader loader(dataset, DatasetMapper(o), 2, rank, 3);
    size_t count = 0;
    while (auto sample = loader.next()) {
      ids.push_back(sample->image_id);
      EXPECT_FALSE(sample->input.instances.has_value());
      EXPECT_EQ(std::min(sample->input.image.size(1), sample->input.image.size(2)), 64);
      ++count;
    }
    EXPECT_EQ(count, loader.size());
  }
  EXPECT_EQ(ids, (std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7, 8}));
}

TEST(DetectionDataset, RefusesDifferentCategories) {
  testing::TempDir dir("loader_categories");
  auto a = std::make_shared<const CocoDataset>(
      testing::write_and_load(dir, coco_image(1, "x.png"), coco_annotation(1, 1, 1)));
  auto b = std::make_shared<const CocoDataset>(testing::write_and_load(
      dir, coco_image(1, "x.png"), coco_annotation(1, 1, 1), "{\"id\": 1, \"name\": \"person\"}"));
  EXPECT_NO_THROW(DetectionDataset({a, a}, {"a", "a2"}));
  try {
    DetectionDataset({a, b}, {"a", "b"});
    ADD_FAILURE() << "different categories accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("datasets 'a' and 'b' have different categories"),
              std::string::npos)
        << e.what();
  }
}

TEST(BuildDetectionTrainLoader, ReadsDatasetsAndBatchSizeFromTheConfig) {
  testing::TempDir dir("loader_config");
  small_dataset(dir);  // writes the files
  const std::string name = "loader_test_" + std::to_string(::getpid());
  // Registered once per process (the catalog refuses a taken name; --gtest_repeat reruns this).
  if (!global_catalog().contains(name)) {
    register_coco_instances(name, dir.path("ann.json"), dir.path("images"));
  }
  config::CfgNode cfg = config::get_cfg();
  cfg.merge_from_list({"DATASETS.TRAIN", "('" + name + "', '" + name + "')", "SOLVER.IMS_PER_BATCH",
                       "8", "INPUT.MIN_SIZE_TRAIN", "(32,)", "INPUT.MAX_SIZE_TRAIN", "64",
                       "DATALOADER.NUM_WORKERS", "2", "SEED", "3"});
  auto loader = build_detection_train_loader(cfg, /*rank=*/1, /*world_size=*/2);
  EXPECT_EQ(loader->dataset().size(), 16u);  // the dataset twice, concatenated
  std::vector<ModelInput> batch = loader->next_batch();
  ASSERT_EQ(batch.size(), 4u);  // 8 images over 2 ranks
  for (const auto& input : batch) {
    EXPECT_EQ(std::min(input.image.size(1), input.image.size(2)), 32);
  }
  cfg.merge_from_list({"SOLVER.IMS_PER_BATCH", "3"});
  EXPECT_THROW(build_detection_train_loader(cfg, 0, 2), Error);
}

}  // namespace
}  // namespace detkit::data

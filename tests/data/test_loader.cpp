// The threaded loaders: batches depend on the seed only (not on the number of workers), grouping
// by aspect ratio, early stop, a worker's exception, the test loader's shards, config wiring.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <set>

#include "detkit/config/defaults.h"
#include "detkit/data/catalog.h"
#include "detkit/data/loader.h"
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
  TrainLoader loader(dataset, augmenting_mapper(), o);
  std::string message;
  // The sampler visits every image within the first epoch (8 images: at most 8 batches).
  for (int b = 0; b < 8 && message.empty(); ++b) {
    try {
      loader.next_batch();
    } catch (const Error& e) {
      message = e.what();
    }
  }
  EXPECT_NE(message.find("img3.png: image file not found"), std::string::npos) << message;
  EXPECT_NE(message.find("image id 3"), std::string::npos) << message;
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
// replay it replaces would have failed on the first). With grouping, it maps at most the samples
// drawn earlier that wait in a bucket for a later batch.
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
    std::filesystem::remove(dir.path("images/" + std::string(loc.dataset->image(loc.image_index).file_name)));
  }
  TrainLoader resumed(dataset, augmenting_mapper(), o);
  EXPECT_EQ(resumed.samples_mapped(), 0u);
  EXPECT_EQ(resumed.next_batch().size(), 2u);  // positions 6 and 7: images that still exist
  EXPECT_EQ(resumed.samples_mapped(), 2u);

  o.start_batch = 0;
  TrainLoader replaying(dataset, augmenting_mapper(), o);
  EXPECT_THROW(replaying.next_batch(), Error);  // the files of batch 0 are gone

  // With grouping: mapped = what the batches from N on use, plus at most batch_size - 1 waiting
  // samples per bucket; the uninterrupted loader maps everything before N as well.
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
  EXPECT_LE(grouped.samples_mapped(), used_after + 2 * (o.batch_size - 1));
  EXPECT_LT(grouped.samples_mapped(), straight.samples_mapped());
  std::cout << "[ loader ] resumed at batch 6: mapped " << grouped.samples_mapped()
            << " samples for 3 batches; the uninterrupted loader mapped " << straight.samples_mapped()
            << "\n";
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

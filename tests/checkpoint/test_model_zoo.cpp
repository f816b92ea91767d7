// Where detectron2:// and model-zoo URLs are fetched from and cached (Detectron2's cache layout,
// $FVCORE_CACHE, $DETKIT_MODEL_ZOO_URL), and the model zoo's table.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "detkit/checkpoint/model_zoo.h"
#include "detkit/utils/error.h"
#include "tests/support/scoped_env.h"

namespace detkit::checkpoint {
namespace {

using testing::ScopedEnv;

TEST(ModelZoo, Detectron2UrlsResolveToDetectron2sCache) {
  ScopedEnv cache("FVCORE_CACHE", "/data/cache");
  ScopedEnv mirror("DETKIT_MODEL_ZOO_URL", nullptr);
  const WeightsLocation zoo = locate_weights("detectron2://ImageNetPretrained/MSRA/R-50.pkl");
  EXPECT_EQ(zoo.url, "https://dl.fbaipublicfiles.com/detectron2/ImageNetPretrained/MSRA/R-50.pkl");
  EXPECT_EQ(zoo.cache_path, "/data/cache/detectron2/ImageNetPretrained/MSRA/R-50.pkl");
  const WeightsLocation https = locate_weights(
      "https://dl.fbaipublicfiles.com/detectron2/COCO-Detection/faster_rcnn_R_50_FPN_1x/"
      "137257794/model_final_b275ba.pkl");
  EXPECT_EQ(https.cache_path,
            "/data/cache/detectron2/COCO-Detection/faster_rcnn_R_50_FPN_1x/137257794/"
            "model_final_b275ba.pkl");
  // Any other URL: the cache dir + the URL's path, without the query (iopath's layout).
  const WeightsLocation other =
      locate_weights("http://host:8000/a/b/w.pkl?matching_heuristics=True");
  EXPECT_EQ(other.url, "http://host:8000/a/b/w.pkl?matching_heuristics=True");
  EXPECT_EQ(other.cache_path, "/data/cache/a/b/w.pkl");
  EXPECT_TRUE(is_weights_url("detectron2://x.pkl"));
  EXPECT_FALSE(is_weights_url("output/model_final.pth"));
  EXPECT_EQ(local_weights_path("output/model_final.pth"), "output/model_final.pth");
  EXPECT_THROW(locate_weights("https://host/"), Error);
  EXPECT_THROW(locate_weights("detectron2://../../etc/passwd"), Error);
}

TEST(ModelZoo, TheMirrorReplacesTheBaseUrlButNotTheCachePath) {
  ScopedEnv cache("FVCORE_CACHE", nullptr);
  ScopedEnv home("HOME", "/home/u");
  ScopedEnv mirror("DETKIT_MODEL_ZOO_URL", "http://127.0.0.1:8080/zoo");
  for (const char* url :
       {"detectron2://ImageNetPretrained/MSRA/R-50.pkl",
        "https://dl.fbaipublicfiles.com/detectron2/ImageNetPretrained/MSRA/R-50.pkl"}) {
    const WeightsLocation location = locate_weights(url);
    EXPECT_EQ(location.url, "http://127.0.0.1:8080/zoo/ImageNetPretrained/MSRA/R-50.pkl");
    EXPECT_EQ(location.cache_path,
              "/home/u/.torch/iopath_cache/detectron2/ImageNetPretrained/MSRA/R-50.pkl");
  }
}

TEST(ModelZoo, ConfigsMapToDetectron2sPublishedWeights) {
  EXPECT_EQ(model_zoo_url("configs/COCO-InstanceSegmentation/mask_rcnn_R_50_FPN_3x.yaml"),
            "https://dl.fbaipublicfiles.com/detectron2/COCO-InstanceSegmentation/"
            "mask_rcnn_R_50_FPN_3x/137849600/model_final_f10217.pkl");
  EXPECT_EQ(model_zoo_url("COCO-Detection/faster_rcnn_R_50_FPN_1x.yaml"),
            "https://dl.fbaipublicfiles.com/detectron2/COCO-Detection/faster_rcnn_R_50_FPN_1x/"
            "137257794/model_final_b275ba.pkl");
  EXPECT_EQ(model_zoo_url("configs/COCO-Keypoints/keypoint_rcnn_R_50_FPN_1x.yaml"),
            "https://dl.fbaipublicfiles.com/detectron2/COCO-Keypoints/keypoint_rcnn_R_50_FPN_1x/"
            "137261548/model_final_04e291.pkl");
  try {
    model_zoo_url("Misc/semantic_R_50_FPN_1x.yaml");  // Detectron2 publishes no weights for it
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("COCO-Detection/faster_rcnn_R_50_FPN_1x.yaml"),
              std::string::npos)
        << e.what();
  }
  // Every YAML config of Detectron2's table that detkit ships, each of them shipped.
  EXPECT_EQ(model_zoo_configs().size(), 52u);
  for (const std::string& config : model_zoo_configs())
    EXPECT_TRUE(std::filesystem::is_regular_file(std::string(DETKIT_SOURCE_DIR) + "/configs/" +
                                                 config + ".yaml"))
        << config;
}

}  // namespace
}  // namespace detkit::checkpoint

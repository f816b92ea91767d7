#include "detkit/checkpoint/model_zoo.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/file.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <map>

#include "detkit/checkpoint/download.h"
#include "detkit/utils/error.h"
#include "detkit/utils/strings.h"

namespace detkit::checkpoint {
namespace {

namespace fs = std::filesystem;

std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

// Detectron2's model_zoo.py table (config path -> model id/file): every YAML config detkit ships
// (its LazyConfig-only new_baselines are not shipped).
const std::map<std::string, std::string>& zoo_table() {
  static const std::map<std::string, std::string> table = {
      {"COCO-Detection/faster_rcnn_R_50_C4_1x", "137257644/model_final_721ade.pkl"},
      {"COCO-Detection/faster_rcnn_R_50_DC5_1x", "137847829/model_final_51d356.pkl"},
      {"COCO-Detection/faster_rcnn_R_50_FPN_1x", "137257794/model_final_b275ba.pkl"},
      {"COCO-Detection/faster_rcnn_R_50_C4_3x", "137849393/model_final_f97cb7.pkl"},
      {"COCO-Detection/faster_rcnn_R_50_DC5_3x", "137849425/model_final_68d202.pkl"},
      {"COCO-Detection/faster_rcnn_R_50_FPN_3x", "137849458/model_final_280758.pkl"},
      {"COCO-Detection/faster_rcnn_R_101_C4_3x", "138204752/model_final_298dad.pkl"},
      {"COCO-Detection/faster_rcnn_R_101_DC5_3x", "138204841/model_final_3e0943.pkl"},
      {"COCO-Detection/faster_rcnn_R_101_FPN_3x", "137851257/model_final_f6e8b1.pkl"},
      {"COCO-Detection/faster_rcnn_X_101_32x8d_FPN_3x", "139173657/model_final_68b088.pkl"},
      {"COCO-Detection/retinanet_R_50_FPN_1x", "190397773/model_final_bfca0b.pkl"},
      {"COCO-Detection/retinanet_R_50_FPN_3x", "190397829/model_final_5bd44e.pkl"},
      {"COCO-Detection/retinanet_R_101_FPN_3x", "190397697/model_final_971ab9.pkl"},
      {"COCO-Detection/rpn_R_50_C4_1x", "137258005/model_final_450694.pkl"},
      {"COCO-Detection/rpn_R_50_FPN_1x", "137258492/model_final_02ce48.pkl"},
      {"COCO-Detection/fast_rcnn_R_50_FPN_1x", "137635226/model_final_e5f7ce.pkl"},
      {"COCO-InstanceSegmentation/mask_rcnn_R_50_C4_1x", "137259246/model_final_9243eb.pkl"},
      {"COCO-InstanceSegmentation/mask_rcnn_R_50_DC5_1x", "137260150/model_final_4f86c3.pkl"},
      {"COCO-InstanceSegmentation/mask_rcnn_R_50_FPN_1x", "137260431/model_final_a54504.pkl"},
      {"COCO-InstanceSegmentation/mask_rcnn_R_50_C4_3x", "137849525/model_final_4ce675.pkl"},
      {"COCO-InstanceSegmentation/mask_rcnn_R_50_DC5_3x", "137849551/model_final_84107b.pkl"},
      {"COCO-InstanceSegmentation/mask_rcnn_R_50_FPN_3x", "137849600/model_final_f10217.pkl"},
      {"COCO-InstanceSegmentation/mask_rcnn_R_101_C4_3x", "138363239/model_final_a2914c.pkl"},
      {"COCO-InstanceSegmentation/mask_rcnn_R_101_DC5_3x", "138363294/model_final_0464b7.pkl"},
      {"COCO-InstanceSegmentation/mask_rcnn_R_101_FPN_3x", "138205316/model_final_a3ec72.pkl"},
      {"COCO-InstanceSegmentation/mask_rcnn_X_101_32x8d_FPN_3x",
       "139653917/model_final_2d9806.pkl"},
      {"COCO-Keypoints/keypoint_rcnn_R_50_FPN_1x", "137261548/model_final_04e291.pkl"},
      {"COCO-Keypoints/keypoint_rcnn_R_50_FPN_3x", "137849621/model_final_a6e10b.pkl"},
      {"COCO-Keypoints/keypoint_rcnn_R_101_FPN_3x", "138363331/model_final_997cc7.pkl"},
      {"COCO-Keypoints/keypoint_rcnn_X_101_32x8d_FPN_3x", "139686956/model_final_5ad38f.pkl"},
      {"COCO-PanopticSegmentation/panoptic_fpn_R_50_1x", "139514544/model_final_dbfeb4.pkl"},
      {"COCO-PanopticSegmentation/panoptic_fpn_R_50_3x", "139514569/model_final_c10459.pkl"},
      {"COCO-PanopticSegmentation/panoptic_fpn_R_101_3x", "139514519/model_final_cafdb1.pkl"},
      {"LVISv0.5-InstanceSegmentation/mask_rcnn_R_50_FPN_1x", "144219072/model_final_571f7c.pkl"},
      {"LVISv0.5-InstanceSegmentation/mask_rcnn_R_101_FPN_1x", "144219035/model_final_824ab5.pkl"},
      {"LVISv0.5-InstanceSegmentation/mask_rcnn_X_101_32x8d_FPN_1x",
       "144219108/model_final_5e3439.pkl"},
      {"Cityscapes/mask_rcnn_R_50_FPN", "142423278/model_final_af9cf5.pkl"},
      {"PascalVOC-Detection/faster_rcnn_R_50_C4", "142202221/model_final_b1acc2.pkl"},
      {"Misc/mask_rcnn_R_50_FPN_1x_dconv_c3-c5", "138602867/model_final_65c703.pkl"},
      {"Misc/mask_rcnn_R_50_FPN_3x_dconv_c3-c5", "144998336/model_final_821d0b.pkl"},
      {"Misc/cascade_mask_rcnn_R_50_FPN_1x", "138602847/model_final_e9d89b.pkl"},
      {"Misc/cascade_mask_rcnn_R_50_FPN_3x", "144998488/model_final_480dd8.pkl"},
      {"Misc/mask_rcnn_R_50_FPN_3x_syncbn", "169527823/model_final_3b3c51.pkl"},
      {"Misc/mask_rcnn_R_50_FPN_3x_gn", "138602888/model_final_dc5d9e.pkl"},
      {"Misc/scratch_mask_rcnn_R_50_FPN_3x_gn", "138602908/model_final_01ca85.pkl"},
      {"Misc/scratch_mask_rcnn_R_50_FPN_9x_gn", "183808979/model_final_da7b4c.pkl"},
      {"Misc/scratch_mask_rcnn_R_50_FPN_9x_syncbn", "184226666/model_final_5ce33e.pkl"},
      {"Misc/panoptic_fpn_R_101_dconv_cascade_gn_3x", "139797668/model_final_be35db.pkl"},
      {"Misc/cascade_mask_rcnn_X_152_32x8d_FPN_IN5k_gn_dconv", "18131413/model_0039999_e76410.pkl"},
      {"Detectron1-Comparisons/faster_rcnn_R_50_FPN_noaug_1x", "137781054/model_final_7ab50c.pkl"},
      {"Detectron1-Comparisons/mask_rcnn_R_50_FPN_noaug_1x", "137781281/model_final_62ca52.pkl"},
      {"Detectron1-Comparisons/keypoint_rcnn_R_50_FPN_1x", "137781195/model_final_cce136.pkl"},
  };
  return table;
}

// Holds an exclusive lock on `path` while alive.
class FileLock {
 public:
  explicit FileLock(const std::string& path) : fd_(::open(path.c_str(), O_RDWR | O_CREAT, 0644)) {
    if (fd_ >= 0) ::flock(fd_, LOCK_EX);
  }
  ~FileLock() {
    if (fd_ >= 0) ::close(fd_);  // releases the lock
  }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_;
};

}  // namespace

std::string weights_cache_dir() {
  const std::string fvcore = env("FVCORE_CACHE");
  if (!fvcore.empty()) return fvcore;
  const std::string home = env("HOME");
  return (home.empty() ? std::string("/tmp") : home) + "/.torch/iopath_cache";
}

bool is_weights_url(const std::string& path) {
  return starts_with(path, "detectron2://") || starts_with(path, "http://") ||
         starts_with(path, "https://");
}

WeightsLocation locate_weights(const std::string& url) {
  std::string mirror = env("DETKIT_MODEL_ZOO_URL");
  if (!mirror.empty() && mirror.back() != '/') mirror += '/';
  std::string zoo_path;  // P of detectron2://P or of the model zoo's base URL
  if (starts_with(url, "detectron2://")) zoo_path = url.substr(13);
  if (starts_with(url, kModelZooBaseUrl))
    zoo_path = url.substr(std::string(kModelZooBaseUrl).size());
  WeightsLocation location;
  std::string url_path;  // the URL's path, as iopath caches it
  if (starts_with(url, "detectron2://") || starts_with(url, kModelZooBaseUrl)) {
    location.url = (mirror.empty() ? std::string(kModelZooBaseUrl) : mirror) + zoo_path;
    url_path = "detectron2/" + zoo_path;
  } else {
    location.url = url;
    const size_t scheme = url.find("://");
    const size_t slash =
        scheme == std::string::npos ? std::string::npos : url.find('/', scheme + 3);
    url_path = slash == std::string::npos ? "" : url.substr(slash + 1);
  }
  url_path = url_path.substr(0, url_path.find('?'));
  if (url_path.empty() || url_path.back() == '/' || url_path.find("..") != std::string::npos)
    throw Error("MODEL.WEIGHTS '" + url + "' does not name a file");
  location.cache_path = (fs::path(weights_cache_dir()) / url_path).string();
  return location;
}

std::string local_weights_path(const std::string& path) {
  if (!is_weights_url(path)) return path;
  const WeightsLocation location = locate_weights(path);
  if (fs::exists(location.cache_path)) return location.cache_path;
  std::error_code error;
  fs::create_directories(fs::path(location.cache_path).parent_path(), error);
  FileLock lock(location.cache_path + ".lock");
  if (fs::exists(location.cache_path)) return location.cache_path;  // another process got it
  spdlog::info("Downloading {} to {}", location.url, location.cache_path);
  int64_t expected = -1;
  try {
    download_file(location.url, location.cache_path, {}, &expected);
  } catch (const Error& e) {
    throw Error(std::string(e.what()) + ". To run offline, place the file at '" +
                location.cache_path + "' (" +
                (expected >= 0 ? std::to_string(expected) + " bytes"
                               : std::string("the server announced no size")) +
                "), or set DETKIT_MODEL_ZOO_URL to download from a mirror instead of " +
                kModelZooBaseUrl);
  }
  return location.cache_path;
}

WeightsFile fetch_weights(const std::string& path) {
  const std::string local = local_weights_path(path);
  try {
    return read_weights_file(local);
  } catch (const Error& e) {
    if (local == path) throw;
    throw Error(std::string(e.what()) + " (downloaded from '" + path +
                "'; delete the file to download it again)");
  }
}

std::string model_zoo_url(const std::string& config_path) {
  fs::path path(config_path);
  std::string name = (path.parent_path().filename() / path.stem()).string();
  auto it = zoo_table().find(name);
  if (it == zoo_table().end()) {
    std::string known;
    for (const auto& [config, file] : zoo_table()) known += "\n  " + config + ".yaml";
    throw Error("Detectron2's model zoo has no trained weights for '" + config_path +
                "' among the models detkit builds; it knows:" + known);
  }
  return std::string(kModelZooBaseUrl) + name + "/" + it->second;
}

std::vector<std::string> model_zoo_configs() {
  std::vector<std::string> out;
  for (const auto& [config, file] : zoo_table()) out.push_back(config);
  return out;
}

}  // namespace detkit::checkpoint

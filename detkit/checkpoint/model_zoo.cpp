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

// Detectron2's model_zoo.py table (config path -> model id/file) for the models detkit builds.
const std::map<std::string, std::string>& zoo_table() {
  static const std::map<std::string, std::string> table = {
      {"COCO-Detection/faster_rcnn_R_50_FPN_1x", "137257794/model_final_b275ba.pkl"},
      {"COCO-Detection/faster_rcnn_R_50_FPN_3x", "137849458/model_final_280758.pkl"},
      {"COCO-Detection/faster_rcnn_R_101_FPN_3x", "137851257/model_final_f6e8b1.pkl"},
      {"COCO-Detection/faster_rcnn_X_101_32x8d_FPN_3x", "139173657/model_final_68b088.pkl"},
      {"COCO-Detection/retinanet_R_50_FPN_1x", "190397773/model_final_bfca0b.pkl"},
      {"COCO-Detection/retinanet_R_50_FPN_3x", "190397829/model_final_5bd44e.pkl"},
      {"COCO-InstanceSegmentation/mask_rcnn_R_50_FPN_1x", "137260431/model_final_a54504.pkl"},
      {"COCO-InstanceSegmentation/mask_rcnn_R_50_FPN_3x", "137849600/model_final_f10217.pkl"},
      {"COCO-InstanceSegmentation/mask_rcnn_R_101_FPN_3x", "138205316/model_final_a3ec72.pkl"},
      {"COCO-InstanceSegmentation/mask_rcnn_X_101_32x8d_FPN_3x",
       "139653917/model_final_2d9806.pkl"},
      {"Misc/cascade_mask_rcnn_R_50_FPN_1x", "138602847/model_final_e9d89b.pkl"},
      {"Misc/cascade_mask_rcnn_R_50_FPN_3x", "144998488/model_final_480dd8.pkl"},
      {"Detectron1-Comparisons/faster_rcnn_R_50_FPN_noaug_1x", "137781054/model_final_7ab50c.pkl"},
      {"Detectron1-Comparisons/mask_rcnn_R_50_FPN_noaug_1x", "137781281/model_final_62ca52.pkl"},
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

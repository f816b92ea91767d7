#pragma once
// Where Detectron2's weights live: `detectron2://P` and `https://dl.fbaipublicfiles.com/
// detectron2/P` resolve to Detectron2's own cache ($FVCORE_CACHE, else ~/.torch/iopath_cache,
// + /detectron2/P), so a machine that has Detectron2's cache works unchanged and offline; an
// absent file is downloaded ($DETKIT_MODEL_ZOO_URL replaces the base URL). And the model zoo's
// table: the trained weights of each config detkit can build.
#include <string>
#include <vector>

#include "detkit/checkpoint/weights_file.h"

namespace detkit::checkpoint {

/// Detectron2's model-zoo base URL.
inline constexpr const char* kModelZooBaseUrl = "https://dl.fbaipublicfiles.com/detectron2/";

/// $FVCORE_CACHE, else $HOME/.torch/iopath_cache (iopath's get_cache_dir).
std::string weights_cache_dir();

/// True for detectron2://, http:// and https:// paths.
bool is_weights_url(const std::string& path);

struct WeightsLocation {
  std::string url;         // what is downloaded (the mirror's when DETKIT_MODEL_ZOO_URL is set)
  std::string cache_path;  // where Detectron2 keeps it: cache dir + the URL's path, no query
};

/// Where `url` (detectron2://P, http(s)://host/P) is fetched from and cached.
WeightsLocation locate_weights(const std::string& url);

/// A local file for MODEL.WEIGHTS: `path` itself when it is not a URL; else the cached copy,
/// downloaded first when absent (one process downloads, others wait on a lock file). When the
/// download fails the detkit::Error names the URL, the cache path to place the file at, and
/// the size the server announced (or that it announced none).
std::string local_weights_path(const std::string& path);

/// read_weights_file(local_weights_path(path)): what MODEL.WEIGHTS names, from a path or a URL.
/// An error reading a downloaded file also names the URL and says to delete the file.
WeightsFile fetch_weights(const std::string& path);

/// The trained weights Detectron2's model zoo publishes for `config_path` (".../COCO-
/// InstanceSegmentation/mask_rcnn_R_50_FPN_1x.yaml": the last two components are looked up);
/// throws detkit::Error listing the configs it knows when there are none.
std::string model_zoo_url(const std::string& config_path);

/// The model-zoo configs model_zoo_url knows ("COCO-Detection/faster_rcnn_R_50_FPN_1x", ...).
std::vector<std::string> model_zoo_configs();

}  // namespace detkit::checkpoint

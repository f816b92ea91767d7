// detkit model-zoo url CONFIG | get CONFIG | list: the trained weights Detectron2's model zoo
// publishes for a config (its URL; fetched into Detectron2's cache, the path printed).
#include <iostream>
#include <memory>

#include "detkit/checkpoint/model_zoo.h"
#include "tools/commands.h"

namespace detkit::tools {

CommandRunner add_model_zoo_command(CLI::App& app) {
  auto config = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand(
      "model-zoo", "Detectron2 model-zoo weights for a config: url, get (into the cache), list");
  cmd->require_subcommand(1);
  CLI::App* url = cmd->add_subcommand("url", "print the weights URL the model zoo gives CONFIG");
  url->add_option("config", *config,
                  "config path, e.g. COCO-InstanceSegmentation/"
                  "mask_rcnn_R_50_FPN_1x.yaml")
      ->required();
  CLI::App* get =
      cmd->add_subcommand("get",
                          "download CONFIG's weights into Detectron2's cache ($FVCORE_CACHE or "
                          "~/.torch/iopath_cache) unless present; print the file's path");
  get->add_option("config", *config, "config path")->required();
  CLI::App* list = cmd->add_subcommand("list", "print the configs with model-zoo weights");
  return [cmd, url, get, list, config]() {
    if (!*cmd) return -1;
    if (*list) {
      for (const std::string& name : checkpoint::model_zoo_configs())
        std::cout << name << ".yaml\n";
    } else if (*url) {
      std::cout << checkpoint::model_zoo_url(*config) << "\n";
    } else if (*get) {
      std::cout << checkpoint::local_weights_path(checkpoint::model_zoo_url(*config)) << "\n";
    }
    return 0;
  };
}

}  // namespace detkit::tools

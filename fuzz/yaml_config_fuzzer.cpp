// Detectron2 YAML configs: anchors and aliases, _BASE_ chains (a base beside the file, and the
// file itself for cycles), values coerced to the defaults' types, dump() read back.
#include "detkit/config/defaults.h"
#include "fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string base = [] {
    const std::string text =
        "MODEL:\n  MASK_ON: True\n  RESNETS: {DEPTH: 50}\nSOLVER:\n  STEPS: (10, 20)\n";
    return detkit::fuzz::write_scratch("base.yaml", reinterpret_cast<const uint8_t*>(text.data()),
                                       text.size());
  }();
  (void)base;
  const std::string path = detkit::fuzz::write_scratch("config.yaml", data, size);
  detkit::fuzz::refuse_only_with_named_errors([&] {
    detkit::config::CfgNode cfg = detkit::config::get_cfg();
    cfg.merge_from_file(path);
    const std::string dumped = cfg.dump();
    const std::string again = detkit::fuzz::write_scratch(
        "dumped.yaml", reinterpret_cast<const uint8_t*>(dumped.data()), dumped.size());
    detkit::config::CfgNode reread = detkit::config::get_cfg();
    reread.merge_from_file(again);
  });
  return 0;
}

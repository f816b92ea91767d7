// Weights files (MODEL.WEIGHTS): torch.save zips (zip reader, restricted unpickler, tensor
// storages) and the numpy .pkl pickles of the model zoo and Caffe2 (the unpickler, as
// load_pickle_bytes runs it: storages outside the pickle refused). Every input goes both ways.
#include "detkit/checkpoint/torch_file.h"
#include "detkit/checkpoint/unpickler.h"
#include "fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  detkit::fuzz::refuse_only_with_named_errors(
      [&] { (void)detkit::checkpoint::load_torch_bytes(bytes, "model.pth"); });
  detkit::fuzz::refuse_only_with_named_errors([&] {
    const detkit::checkpoint::StorageLoader no_storages =
        [](const std::string&, at::ScalarType, int64_t) -> at::Tensor {
      throw detkit::Error("model.pkl: refers to a torch storage outside it");
    };
    (void)detkit::checkpoint::restricted_unpickle(bytes, no_storages, "model.pkl");
  });
  return 0;
}

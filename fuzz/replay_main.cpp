// The ordinary build's runner of a harness: every file under the folders (or the files) given
// goes through LLVMFuzzerTestOneInput once, in name order. A folder that does not exist is
// skipped with a message (the shared seed data may be absent). Exits 0 when every input was
// handled; a finding aborts (an escaping exception, a crash), which fails the test.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  std::vector<fs::path> inputs;
  for (int i = 1; i < argc; ++i) {
    const fs::path arg = argv[i];
    if (fs::is_regular_file(arg)) {
      inputs.push_back(arg);
    } else if (fs::is_directory(arg)) {
      for (const auto& entry : fs::recursive_directory_iterator(arg))
        if (entry.is_regular_file()) inputs.push_back(entry.path());
    } else {
      std::printf("skipped: %s does not exist\n", arg.c_str());
    }
  }
  std::sort(inputs.begin(), inputs.end());
  size_t bytes = 0;
  for (const fs::path& file : inputs) {
    std::ifstream in(file, std::ios::binary);
    const std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    bytes += data.size();
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(data.data()), data.size());
  }
  std::printf("replayed %zu inputs (%zu bytes)\n", inputs.size(), bytes);
  return inputs.empty() ? 1 : 0;
}

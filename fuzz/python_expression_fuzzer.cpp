// The restricted Python evaluator of `!!python/object/apply:eval` config tags: any bytes as the
// expression; a value within the limit or a named refusal, never a crash, a hang or a huge list.
#include "detkit/config/python_expression.h"
#include "fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string expression(reinterpret_cast<const char*>(data), size);
  detkit::fuzz::refuse_only_with_named_errors(
      [&] { detkit::config::eval_python_expression(expression, 10000); });
  return 0;
}

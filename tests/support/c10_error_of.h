#pragma once
// The message (without libtorch's backtrace) of the c10::Error that `f` throws, or "(no error)":
// for tests that check what an op tells a bad input (TORCH_CHECK), as error_of.h does for
// detkit::Error.
#include <c10/util/Exception.h>

#include <functional>
#include <string>

namespace detkit::testing {

inline std::string c10_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const c10::Error& e) {
    return e.what_without_backtrace();
  }
  return "(no error)";
}

}  // namespace detkit::testing

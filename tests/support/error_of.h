#pragma once
// The message of the detkit::Error that `f` throws, or "(no error)": for tests that check what a
// bad input is told.
#include <functional>
#include <string>

#include "detkit/utils/error.h"

namespace detkit::testing {

inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace detkit::testing

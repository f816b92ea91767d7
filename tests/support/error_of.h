#pragma once
// The message of the detkit::Error that `f` throws, or "(no error)": for tests that check what a
// bad input is told.
#include <gtest/gtest.h>

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

/// Fails the calling test unless `text` holds `part`.
inline void expect_contains(const std::string& text, const std::string& part) {
  EXPECT_NE(text.find(part), std::string::npos) << "'" << part << "' not in: " << text;
}

}  // namespace detkit::testing

// Keys detkit does not implement yet are refused when set, never silently ignored.
#include <gtest/gtest.h>

#include <algorithm>

#include "detkit/config/defaults.h"
#include "detkit/config/unimplemented.h"
#include "detkit/utils/error.h"

namespace detkit::config {
namespace {

// A value other than the default: booleans flipped, integers plus one, a non-empty string,
// lists of booleans all true (an empty list gets one entry).
CfgValue changed(const CfgValue& v) {
  switch (v.kind()) {
    case CfgValue::Kind::Bool:
      return CfgValue(!v.as_bool());
    case CfgValue::Kind::Int:
      return CfgValue(v.as_int() + 1);
    case CfgValue::Kind::String:
      return CfgValue(v.as_string() + "high");
    default:
      break;
  }
  std::vector<CfgValue> items;
  for (size_t i = 0; i < std::max<size_t>(v.as_list().size(), 1); ++i) items.emplace_back(true);
  return CfgValue::list(items);
}

TEST(Unimplemented, DefaultsPass) { EXPECT_NO_THROW(check_implemented(get_cfg())); }

TEST(Unimplemented, EveryKeySetIsRefusedWithItsName) {
  ASSERT_GE(unimplemented_keys().size(), 4u);
  for (const auto& entry : unimplemented_keys()) {
    CfgNode cfg = get_cfg();
    cfg.set(entry.key, changed(cfg.get(entry.key)));
    try {
      check_implemented(cfg);
      ADD_FAILURE() << entry.key << " was accepted";
    } catch (const Error& e) {
      const std::string message = e.what();
      std::cout << "[ unimplemented ] " << message << "\n";
      EXPECT_EQ(message.rfind(entry.key + " is ", 0), 0u) << message;
      EXPECT_NE(message.find(entry.feature), std::string::npos) << message;
    }
  }
}

}  // namespace
}  // namespace detkit::config

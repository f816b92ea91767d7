// Keys detkit does not implement yet are refused when set, never silently ignored.
#include <gtest/gtest.h>

#include "detkit/config/defaults.h"
#include "detkit/config/unimplemented.h"
#include "detkit/utils/error.h"

namespace detkit::config {
namespace {

// A value other than the default: booleans flipped, lists of booleans all true.
CfgValue changed(const CfgValue& v) {
  if (v.kind() == CfgValue::Kind::Bool) return CfgValue(!v.as_bool());
  std::vector<CfgValue> items;
  for (size_t i = 0; i < v.as_list().size(); ++i) items.emplace_back(true);
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

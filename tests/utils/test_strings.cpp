#include <gtest/gtest.h>

#include "detkit/utils/strings.h"

namespace detkit {

TEST(Strings, EditDistance) {
  EXPECT_EQ(edit_distance("", ""), 0u);
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(edit_distance("abc", ""), 3u);
}

TEST(Strings, ClosestMatchFindsTypoAndRejectsStrangers) {
  std::vector<std::string> keys = {"MODEL.RPN.NMS_THRESH", "MODEL.RPN.POST_NMS_TOPK_TEST"};
  EXPECT_EQ(closest_match("MODEL.RPN.NMS_THRES", keys), "MODEL.RPN.NMS_THRESH");
  EXPECT_EQ(closest_match("SOLVER.BASE_LR", keys), "");
}

TEST(Strings, SplitJoinTrim) {
  auto parts = split("a.b..c", '.');
  ASSERT_EQ(parts.size(), 4u);
  EXPECT_EQ(parts[2], "");
  EXPECT_EQ(join(parts, "/"), "a/b//c");
  EXPECT_EQ(trim("  x y \n"), "x y");
}

}  // namespace detkit

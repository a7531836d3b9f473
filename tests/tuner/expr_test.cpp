#include <gtest/gtest.h>

#include "tiletune/expr.hpp"

using tiletune::Expr;
using tiletune::ExprError;

TEST(Expr, ArithmeticFollowsCPrecedence) {
  EXPECT_EQ(Expr::parse("1 + 2 * 3").eval({}), 7);
  EXPECT_EQ(Expr::parse("(1 + 2) * 3").eval({}), 9);
  EXPECT_EQ(Expr::parse("-7 / 2").eval({}), -3);  // truncates toward zero, as C does
  EXPECT_EQ(Expr::parse("7 % 4 + 10 - 2 - 3").eval({}), 8);
  EXPECT_EQ(Expr::parse("2 < 3 && 3 <= 3 || 0").eval({}), 1);
  EXPECT_EQ(Expr::parse("!(4 != 4) ? 10 : 20").eval({}), 10);
}

TEST(Expr, VariablesAndFunctions) {
  const tiletune::Vars v = {{"N", 1000}, {"TILE", 32}};
  EXPECT_EQ(Expr::parse("ceil_div(N, TILE)").eval(v), 32);
  EXPECT_EQ(Expr::parse("round_up(N, TILE)").eval(v), 1024);
  EXPECT_EQ(Expr::parse("min(N, TILE) + max(N, TILE)").eval(v), 1032);
  EXPECT_EQ(Expr::parse("log2(TILE) + abs(-3)").eval(v), 8);
  EXPECT_EQ(Expr::parse("N*TILE").variables(), (std::vector<std::string>{"N", "TILE"}));
}

TEST(Expr, ErrorsSayWhatAndWhere) {
  EXPECT_THROW(Expr::parse("1 +"), ExprError);
  EXPECT_THROW(Expr::parse("foo(1)"), ExprError);
  EXPECT_THROW(Expr::parse("min(1)"), ExprError);
  EXPECT_THROW(Expr::parse("(1 + 2"), ExprError);
  EXPECT_THROW(Expr::parse("1 $ 2"), ExprError);
  EXPECT_THROW(Expr::parse("X / 0").eval({{"X", 1}}), ExprError);
  EXPECT_THROW(Expr::parse("Y + 1").eval({}), ExprError);
  EXPECT_THROW(Expr::parse("9223372036854775807 + 1").eval({}), ExprError);
  try {
    Expr::parse("Q * 2").eval({});
    FAIL();
  } catch (const ExprError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown variable 'Q'"), std::string::npos) << e.what();
  }
}

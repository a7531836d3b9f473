#include "tiletune/expr.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

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

namespace {

// The ExprError message of parsing and evaluating `text`, or "" when it succeeds.
std::string error_of(const std::string& text, const tiletune::Vars& vars = {}) {
  try {
    Expr::parse(text).eval(vars);
  } catch (const ExprError& e) {
    return e.what();
  }
  return "";
}

// Expects an ExprError whose one-line message names the expression and contains `what`.
void expect_error(const std::string& text, const std::string& what, const tiletune::Vars& vars = {}) {
  const std::string message = error_of(text, vars);
  EXPECT_NE(message.find(what), std::string::npos) << text << " -> " << message;
  if (text.size() < 100 && text.find('\n') == std::string::npos) {
    EXPECT_NE(message.find("in expression '" + text + "'"), std::string::npos) << message;
  }
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

std::string repeat(const std::string& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

constexpr std::int64_t int64_max = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t int64_min = std::numeric_limits<std::int64_t>::min();

}  // namespace

TEST(ExprHostile, AdditionSubtractionAndMultiplicationOverflowAreErrors) {
  const tiletune::Vars v = {{"MAX", int64_max}, {"MIN", int64_min}};
  expect_error("MAX + 1", "integer overflow: 9223372036854775807 + 1 does not fit in 64 bits", v);
  expect_error("MIN - 1", "integer overflow: -9223372036854775808 - 1", v);
  expect_error("MAX * 2", "integer overflow: 9223372036854775807 * 2", v);
  expect_error("MIN * -1", "integer overflow", v);
  expect_error("3037000500 * 3037000500", "integer overflow");
  // The checks do not reject what fits.
  EXPECT_EQ(Expr::parse("MAX - 1 + 1").eval(v), int64_max);
  EXPECT_EQ(Expr::parse("MIN + 1 - 1").eval(v), int64_min);
  EXPECT_EQ(Expr::parse("-9223372036854775807 - 1").eval(v), int64_min);
  EXPECT_EQ(Expr::parse("3037000499 * 3037000499").eval(v), 9223372030926249001LL);
}

TEST(ExprHostile, DivisionAndRemainderByZeroAndOfInt64MinByMinusOneAreErrors) {
  const tiletune::Vars v = {{"MIN", int64_min}, {"Z", 0}};
  expect_error("7 / Z", "division by zero: 7 / 0", v);
  expect_error("7 % Z", "division by zero: 7 % 0", v);
  expect_error("MIN / -1", "integer overflow: -9223372036854775808 / -1 does not fit in 64 bits", v);
  expect_error("MIN % -1", "integer overflow: -9223372036854775808 % -1", v);
  expect_error("(-9223372036854775807 - 1) / -1", "integer overflow");
  // The constraint from the issue, spelled with literals only.
  expect_error("(-9223372036854775807 - 1) % (0 - 1) == 0", "integer overflow");
  EXPECT_EQ(Expr::parse("MIN / 1").eval(v), int64_min);
  EXPECT_EQ(Expr::parse("MIN % 2").eval(v), 0);
  EXPECT_EQ(Expr::parse("-7 % 3").eval(v), -1);  // the sign of the dividend, as in C
}

TEST(ExprHostile, UnaryMinusAndAbsOfInt64MinAreErrors) {
  const tiletune::Vars v = {{"MIN", int64_min}};
  expect_error("-MIN", "integer overflow: -(-9223372036854775808)", v);
  expect_error("--(-9223372036854775807 - 1)", "integer overflow");
  expect_error("abs(MIN)", "integer overflow: abs(-9223372036854775808)", v);
  EXPECT_EQ(Expr::parse("abs(MIN + 1)").eval(v), int64_max);
  EXPECT_EQ(Expr::parse("!MIN + !0").eval(v), 1);
}

TEST(ExprHostile, FunctionEdgeCasesAreErrors) {
  const tiletune::Vars v = {{"MAX", int64_max}, {"MIN", int64_min}};
  expect_error("ceil_div(10, 0)", "ceil_div(10, 0): the divisor must be positive");
  expect_error("ceil_div(10, -3)", "the divisor must be positive");
  expect_error("round_up(10, 0)", "round_up(10, 0): the divisor must be positive");
  expect_error("round_up(MAX, 2)", "integer overflow: round_up(9223372036854775807, 2)", v);
  expect_error("round_up(MAX - 2, 4)", "integer overflow", v);
  expect_error("log2(0)", "log2(0): the argument must be positive");
  expect_error("log2(-8)", "the argument must be positive");
  expect_error("log2(MIN)", "the argument must be positive", v);
  EXPECT_EQ(Expr::parse("ceil_div(MAX, 1)").eval(v), int64_max);
  EXPECT_EQ(Expr::parse("ceil_div(MAX, 2)").eval(v), int64_max / 2 + 1);
  EXPECT_EQ(Expr::parse("ceil_div(MIN, 2)").eval(v), int64_min / 2);
  EXPECT_EQ(Expr::parse("ceil_div(-7, 2)").eval(v), -3);  // the ceiling of -3.5
  EXPECT_EQ(Expr::parse("round_up(MAX, 1)").eval(v), int64_max);
  EXPECT_EQ(Expr::parse("round_up(-7, 4)").eval(v), -4);
  EXPECT_EQ(Expr::parse("log2(MAX)").eval(v), 62);
  EXPECT_EQ(Expr::parse("log2(1)").eval(v), 0);
  EXPECT_EQ(Expr::parse("min(MIN, MAX) + max(MIN, 0)").eval(v), int64_min);
}

TEST(ExprHostile, IntegerLiteralsBeyond64BitsAreErrors) {
  EXPECT_EQ(Expr::parse("9223372036854775807").eval({}), int64_max);
  expect_error("9223372036854775808",
               "integer literal 9223372036854775808 does not fit in 64 bits at offset 0");
  expect_error("1 + 99999999999999999999999", "does not fit in 64 bits at offset 4");
  expect_error("-9223372036854775808", "does not fit in 64 bits");  // as in C: the literal comes first
  expect_error(repeat("9", 100000), "does not fit in 64 bits");
  EXPECT_EQ(Expr::parse("000000000000000000000000000042").eval({}), 42);
}

TEST(ExprHostile, NestingIsBoundedAtEveryRecursivePath) {
  const int ok = Expr::max_depth, deep = Expr::max_depth + 1;
  const std::string too_deep = "nested more than 256 levels deep";
  // Parentheses.
  EXPECT_EQ(Expr::parse(repeat("(", ok) + "7" + repeat(")", ok)).eval({}), 7);
  expect_error(repeat("(", deep) + "7" + repeat(")", deep), too_deep);
  // Unary operators.
  EXPECT_EQ(Expr::parse(repeat("-", ok) + "7").eval({}), 7);
  EXPECT_EQ(Expr::parse(repeat("!", ok) + "7").eval({}), 1);
  expect_error(repeat("-", deep) + "7", too_deep);
  expect_error(repeat("!", deep) + "7", too_deep);
  expect_error(repeat("+", deep) + "7", too_deep);
  expect_error(repeat("- ! + ", deep) + "7", too_deep);
  // Ternaries, in either branch.
  EXPECT_EQ(Expr::parse(repeat("0 ? 1 : ", ok) + "7").eval({}), 7);
  expect_error(repeat("0 ? 1 : ", deep) + "7", too_deep);
  expect_error(repeat("1 ? ", deep) + "7" + repeat(" : 0", deep), too_deep);
  // Function arguments.
  EXPECT_EQ(Expr::parse(repeat("abs(", ok) + "7" + repeat(")", ok)).eval({}), 7);
  expect_error(repeat("abs(", deep) + "7" + repeat(")", deep), too_deep);
  expect_error(repeat("min(1, ", deep) + "7" + repeat(")", deep), too_deep);
  // A mix, and the "a few thousand levels" (which used to overflow the stack).
  expect_error(repeat("(-abs(1 ? ", 70) + "7", too_deep);
  expect_error(repeat("(", 5000) + "1" + repeat(")", 5000), too_deep);
  expect_error(repeat("-(", 5000) + "1", too_deep);
  expect_error(repeat("max(", 100000), too_deep);
}

TEST(ExprHostile, LongFlatExpressionsAreALoopNotADeepTree) {
  // 100 KB of additions: one chain, evaluated left to right with the usual associativity.
  const std::string sum = "1" + repeat(" + 1", 25000);
  EXPECT_EQ(Expr::parse(sum).eval({}), 25001);
  EXPECT_EQ(Expr::parse("100" + repeat(" - 1", 30000)).eval({}), 100 - 30000);
  EXPECT_EQ(Expr::parse("1000000 / 10 / 10 * 3 % 7").eval({}), 5);  // ((1e6 / 10) / 10 * 3) % 7
  EXPECT_EQ(Expr::parse("10 - 4 - 3 + 2").eval({}), 5);
  EXPECT_EQ(Expr::parse(repeat("1 < ", 10000) + "1").eval({}), 1);  // (1 < 1) < 1 ... = 0 < 1 = 1
  EXPECT_EQ(Expr::parse("X" + repeat(" * X", 61)).eval({{"X", 2}}), std::int64_t{1} << 62);
  expect_error("X" + repeat(" * X", 62), "integer overflow: 4611686018427387904 * 2", {{"X", 2}});
  EXPECT_EQ(Expr::parse("1" + repeat(" && 1", 20000) + repeat(" || 0", 20000)).eval({}), 1);
  EXPECT_EQ(Expr::parse(repeat("min(1, 2) + ", 10000) + "0").eval({}), 10000);
  EXPECT_EQ(Expr::parse(std::string(100000, ' ') + "5" + std::string(100000, ' ')).eval({}), 5);
  // A 100 KB name parses; it is an unknown variable, and the message shows only its start.
  const std::string message = error_of(std::string(100000, 'v'));
  EXPECT_NE(message.find("unknown variable"), std::string::npos) << message.substr(0, 300);
  EXPECT_LT(message.size(), 1000u);
}

TEST(ExprHostile, ShortCircuitSkipsTheErrorsOfTheSideNotTaken) {
  const tiletune::Vars v = {{"Z", 0}};
  EXPECT_EQ(Expr::parse("Z != 0 && 10 / Z > 1").eval(v), 0);
  EXPECT_EQ(Expr::parse("Z == 0 || 10 % Z").eval(v), 1);
  EXPECT_EQ(Expr::parse("Z ? 1 / Z : 7").eval(v), 7);
  expect_error("Z == 0 && 10 / Z > 1", "division by zero", v);
}

TEST(ExprHostile, ErrorMessagesAreOneLineAndNameTheExpression) {
  std::string message = error_of("1 +\n2 +\n\x01");
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  EXPECT_NE(message.find("in expression '1 +\\n2 +\\n\\x01': unexpected '\\x01' at offset 8"),
            std::string::npos)
      << message;
  message = error_of("A +" + repeat(" A +", 10000));
  EXPECT_NE(message.find("in expression 'A + A + A"), std::string::npos) << message;
  EXPECT_NE(message.find("... (40003 characters)': unexpected end at offset 40003"), std::string::npos)
      << message;
  expect_error("1 << 2", "unexpected '<' at offset 3");
  expect_error("\xff", "unexpected");
  expect_error("", "unexpected end at offset 0");
  expect_error("frobnicate(1, 2)", "unknown function 'frobnicate' at offset 0");
  expect_error("min(1, 2, 3)", "min takes 2 arguments, got 3");
  expect_error("abs()", "abs takes 1 arguments, got 0");
  expect_error("1 ? 2", "expected ':'");
}

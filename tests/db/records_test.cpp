#include "tiletune/records.hpp"

#include <gtest/gtest.h>

#include <functional>

namespace tiletune {
namespace {

std::string invalid_message(const std::function<void()>& body) {
  try {
    body();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(no exception)";
}

TEST(Records, OutcomeNamesRoundTrip) {
  for (Outcome o : {Outcome::ok, Outcome::pruned, Outcome::compile_failed, Outcome::launch_failed,
                    Outcome::runtime_failed, Outcome::timeout, Outcome::wrong_result}) {
    EXPECT_EQ(outcome_from_string(to_string(o)), o) << to_string(o);
  }
  EXPECT_EQ(to_string(Outcome::compile_failed), "compile_failed");
  EXPECT_FALSE(outcome_from_string("OK").has_value());
  EXPECT_FALSE(outcome_from_string("").has_value());
  EXPECT_FALSE(outcome_from_string("failed").has_value());
}

TEST(Records, ParamsTextIsSortedAndRoundTrips) {
  const Params params{{"TILE_WIDTH", 32}, {"BLOCK_Y", -4}, {"A", 0}, {"big", 9007199254740993LL}};
  const std::string text = params_to_text(params);
  EXPECT_EQ(text, "A=0,BLOCK_Y=-4,TILE_WIDTH=32,big=9007199254740993");
  EXPECT_EQ(params_from_text(text), params);
  EXPECT_EQ(params_to_text({}), "");
  EXPECT_TRUE(params_from_text("").empty());
  EXPECT_EQ(params_from_text(" A = 1 , B=2"), (Params{{"A", 1}, {"B", 2}}));
}

TEST(Records, ParamsFromTextRejectsMalformedText) {
  for (const char* bad : {"A", "A=", "A=x", "1A=2", "A=1,A=2", "A=1,", ",A=1", "A=1.5",
                          "A=99999999999999999999", "A-B=1", "A=1;B=2", "=3"}) {
    const std::string message = invalid_message([&] { params_from_text(bad); });
    EXPECT_NE(message, "(no exception)") << bad;
    EXPECT_NE(message.find(std::string("'") + bad + "'"), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
}

TEST(Records, ParamsToTextRejectsNamesThatAreNotIdentifiers) {
  EXPECT_THROW(params_to_text({{"2x", 1}}), std::invalid_argument);
  EXPECT_THROW(params_to_text({{"a b", 1}}), std::invalid_argument);
  EXPECT_THROW(params_to_text({{"", 1}}), std::invalid_argument);
}

TEST(Records, SizeTextRoundTrips) {
  const ProblemKey key{{1000, 1000, 777}, {}};
  EXPECT_EQ(key.size_text(), "1000x1000x777");
  EXPECT_EQ(parse_size_text("1000x1000x777"), key.dims);
  EXPECT_EQ(parse_size_text("1048576"), (std::vector<std::int64_t>{1048576}));
}

TEST(Records, ProblemTextRoundTrips) {
  const ProblemKey conv{{1048576}, {{"boundary", 0}, {"mask_width", 5}}};
  EXPECT_EQ(parse_problem_text(conv.text()), conv);
  EXPECT_EQ(parse_problem_text("1000x1000x777"), (ProblemKey{{1000, 1000, 777}, {}}));
  for (const char* bad : {"", " mask_width=5", "1000 mask_width", "1000x 5", "1000 a=1 b=2"})
    EXPECT_THROW(parse_problem_text(bad), std::invalid_argument) << bad;
}

TEST(Records, SizeTextRejectsZeroNegativeAndGarbage) {
  EXPECT_EQ(invalid_message([] { parse_size_text("0x5"); }),
            "size must be positive integers separated by 'x', got '0x5'");
  for (const char* bad : {"", "x", "10x", "x10", "-1x5", "10xx5", "1.5", " 10", "10X10", "10*10", "+5",
                          "99999999999999999999"}) {
    EXPECT_THROW(parse_size_text(bad), std::invalid_argument) << bad;
  }
}

// What a parser echoes of its input is one line: control characters escaped, a long text cut.
TEST(Records, MessagesQuoteTheInputOnOneLine) {
  EXPECT_EQ(invalid_message([] { parse_size_text("512x5\n\x1b[2Jx"); }),
            "size must be positive integers separated by 'x', got '512x5\\n\\x1b[2Jx'");
  const std::string long_size = "1x" + std::string(500, 'x');
  const std::string message = invalid_message([&] { parse_size_text(long_size); });
  EXPECT_LT(message.size(), 300u);
  EXPECT_NE(message.find("...'"), std::string::npos) << message;
  const std::string args = invalid_message([] { parse_args_text("a\nb=1"); });
  EXPECT_EQ(args.find('\n'), std::string::npos) << args;
  EXPECT_NE(args.find("'a\\nb' is not a C identifier"), std::string::npos) << args;
}

TEST(Records, ArgsTextRoundTrips) {
  const ProblemKey key{{4096}, {{"mask_width", 5}, {"boundary", 0}}};
  EXPECT_EQ(key.args_text(), "boundary=0,mask_width=5");
  EXPECT_EQ(parse_args_text(key.args_text()), key.args);
  EXPECT_EQ(ProblemKey{}.args_text(), "");
  EXPECT_TRUE(parse_args_text("").empty());
  EXPECT_THROW(parse_args_text("mask_width"), std::invalid_argument);
  EXPECT_THROW(parse_args_text("mask width=5"), std::invalid_argument);
}

}  // namespace
}  // namespace tiletune

// libFuzzer target: the expression language of family.json. Parses the input, lists its variables and
// evaluates it with a few variables bound, extremes among them. The only acceptable failure is an ExprError
// with a one-line message; any other exception, a signal or a sanitizer report is a finding.
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>

#include "fuzz_support.hpp"
#include "tiletune/expr.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const tiletune::Vars vars = {
      {"M", 1000},
      {"N", 1},
      {"K", 0},
      {"TILE", 32},
      {"NEG", -7},
      {"BIG", std::numeric_limits<std::int64_t>::max()},
      {"SMALL", std::numeric_limits<std::int64_t>::min()},
  };
  const std::string text = tiletune::fuzz::text_of(data, size);
  try {
    const tiletune::Expr expr = tiletune::Expr::parse(text);
    (void)expr.variables();
    (void)expr.eval(vars);
    (void)expr.eval({});  // every variable unknown
  } catch (const tiletune::ExprError& e) {
    const std::string message = e.what();
    if (message.find('\n') != std::string::npos || message.size() > 1000) {
      std::fprintf(stderr, "ExprError message not one short line: %s\n", message.c_str());
      std::abort();
    }
  }
  return 0;
}

// Integer expressions in family descriptions: launch geometry, buffer sizes, constraints, metrics.
// Grammar: C-like integer arithmetic (+ - * / % unary - !, comparisons, && ||, ?:) over parameters and
// problem variables, with the functions ceil_div, round_up, min, max, abs, log2 (floor). Hostile text is an
// ExprError, never a crash: nesting (parentheses, unary operators, ternaries, function arguments) is bounded
// at 256 levels, and every arithmetic step is checked (overflow, division by zero, INT64_MIN / -1,
// abs(INT64_MIN), log2 of a non-positive value, integer literals beyond 64 bits).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace tiletune {

using Vars = std::map<std::string, std::int64_t>;

class ExprError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Expr {
 public:
  // Parses once; throws ExprError "in expression 'TEXT': ... at offset N" (one line: control characters
  // escaped, long text cut) on a syntax error or nesting deeper than 256 levels.
  static Expr parse(const std::string& text);
  // The deepest nesting parse accepts.
  static constexpr int max_depth = 256;
  // Throws ExprError on an unknown variable, a division by zero or an overflow of any step.
  std::int64_t eval(const Vars& vars) const;
  const std::string& text() const { return text_; }
  // Every identifier the expression reads (not function names).
  std::vector<std::string> variables() const;

  struct Node;

 private:
  std::string text_;
  std::shared_ptr<const Node> root_;
};

}  // namespace tiletune

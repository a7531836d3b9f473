// Integer expressions in family descriptions: launch geometry, buffer sizes, constraints, metrics.
// Grammar: C-like integer arithmetic (+ - * / % unary - !, comparisons, && ||, ?:) over parameters and problem
// variables, with the functions ceil_div, round_up, min, max, abs, log2 (floor).
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
  // Parses once; throws ExprError "in expression 'TEXT': ..." on a syntax error.
  static Expr parse(const std::string& text);
  // Throws ExprError on an unknown variable, a division by zero or an overflow.
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

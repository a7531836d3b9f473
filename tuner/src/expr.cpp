#include "tiletune/expr.hpp"

#include <cctype>
#include <limits>
#include <set>

namespace tiletune {

struct Expr::Node {
  enum class Kind { number, variable, unary, binary, ternary, call } kind;
  std::int64_t value = 0;
  std::string name;  // variable, operator or function name
  std::vector<std::shared_ptr<const Node>> kids;
};

namespace {

using NodePtr = std::shared_ptr<const Expr::Node>;
using Kind = Expr::Node::Kind;

class Parser {
 public:
  explicit Parser(const std::string& text) : text_(text) {}

  NodePtr parse_all() {
    NodePtr node = parse_ternary();
    skip_space();
    if (pos_ != text_.size()) fail("unexpected '" + text_.substr(pos_, 1) + "'");
    return node;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw ExprError("in expression '" + text_ + "': " + what + " at offset " + std::to_string(pos_));
  }
  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  bool accept(const std::string& op) {
    skip_space();
    if (text_.compare(pos_, op.size(), op) != 0) return false;
    // Keep "<" from eating the first half of "<=", "&" of "&&", and so on.
    if (op.size() == 1 && pos_ + 1 < text_.size()) {
      const char next = text_[pos_ + 1];
      if ((op == "<" || op == ">" || op == "!" || op == "=") && next == '=') return false;
      if (op == "&" && next == '&') return false;
      if (op == "|" && next == '|') return false;
    }
    pos_ += op.size();
    return true;
  }
  static NodePtr make(Kind kind, std::string name, std::vector<NodePtr> kids, std::int64_t value = 0) {
    auto node = std::make_shared<Expr::Node>();
    node->kind = kind;
    node->name = std::move(name);
    node->kids = std::move(kids);
    node->value = value;
    return node;
  }

  NodePtr parse_ternary() {
    NodePtr cond = parse_binary(0);
    if (accept("?")) {
      NodePtr yes = parse_ternary();
      if (!accept(":")) fail("expected ':'");
      NodePtr no = parse_ternary();
      return make(Kind::ternary, "?", {cond, yes, no});
    }
    return cond;
  }

  // Binary operators by precedence level, lowest first.
  NodePtr parse_binary(int level) {
    static const std::vector<std::vector<std::string>> levels = {
        {"||"}, {"&&"}, {"==", "!="}, {"<=", ">=", "<", ">"}, {"+", "-"}, {"*", "/", "%"}};
    if (level == static_cast<int>(levels.size())) return parse_unary();
    NodePtr left = parse_binary(level + 1);
    for (;;) {
      bool matched = false;
      for (const auto& op : levels[level]) {
        if (accept(op)) {
          left = make(Kind::binary, op, {left, parse_binary(level + 1)});
          matched = true;
          break;
        }
      }
      if (!matched) return left;
    }
  }

  NodePtr parse_unary() {
    if (accept("-")) return make(Kind::unary, "-", {parse_unary()});
    if (accept("!")) return make(Kind::unary, "!", {parse_unary()});
    if (accept("+")) return parse_unary();
    return parse_primary();
  }

  NodePtr parse_primary() {
    skip_space();
    if (pos_ >= text_.size()) fail("unexpected end");
    const char c = text_[pos_];
    if (accept("(")) {
      NodePtr inner = parse_ternary();
      if (!accept(")")) fail("expected ')'");
      return inner;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) {
      std::int64_t value = 0;
      while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
        const int digit = text_[pos_] - '0';
        if (value > (std::numeric_limits<std::int64_t>::max() - digit) / 10) fail("number too large");
        value = value * 10 + digit;
        ++pos_;
      }
      return make(Kind::number, "", {}, value);
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      const std::size_t start = pos_;
      while (pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_'))
        ++pos_;
      std::string name = text_.substr(start, pos_ - start);
      if (accept("(")) {
        std::vector<NodePtr> args;
        if (!accept(")")) {
          do args.push_back(parse_ternary());
          while (accept(","));
          if (!accept(")")) fail("expected ')' after arguments of " + name);
        }
        static const std::map<std::string, std::size_t> arity = {{"ceil_div", 2}, {"round_up", 2}, {"min", 2},
                                                                 {"max", 2},      {"abs", 1},      {"log2", 1}};
        const auto it = arity.find(name);
        if (it == arity.end()) fail("unknown function '" + name + "'");
        if (it->second != args.size())
          fail(name + " takes " + std::to_string(it->second) + " arguments, got " + std::to_string(args.size()));
        return make(Kind::call, name, std::move(args));
      }
      return make(Kind::variable, name, {});
    }
    fail(std::string("unexpected '") + c + "'");
  }

  const std::string& text_;
  std::size_t pos_ = 0;
};

[[noreturn]] void eval_fail(const std::string& text, const std::string& what) {
  throw ExprError("in expression '" + text + "': " + what);
}

std::int64_t checked(const std::string& text, bool overflow, std::int64_t value) {
  if (overflow) eval_fail(text, "integer overflow");
  return value;
}

std::int64_t eval_node(const Expr::Node& node, const Vars& vars, const std::string& text) {
  switch (node.kind) {
    case Kind::number:
      return node.value;
    case Kind::variable: {
      const auto it = vars.find(node.name);
      if (it == vars.end()) eval_fail(text, "unknown variable '" + node.name + "'");
      return it->second;
    }
    case Kind::unary: {
      const std::int64_t v = eval_node(*node.kids[0], vars, text);
      return node.name == "-" ? -v : static_cast<std::int64_t>(!v);
    }
    case Kind::ternary:
      return eval_node(*node.kids[0], vars, text) ? eval_node(*node.kids[1], vars, text)
                                                  : eval_node(*node.kids[2], vars, text);
    case Kind::binary: {
      const std::string& op = node.name;
      const std::int64_t a = eval_node(*node.kids[0], vars, text);
      if (op == "&&") return a && eval_node(*node.kids[1], vars, text);
      if (op == "||") return a || eval_node(*node.kids[1], vars, text);
      const std::int64_t b = eval_node(*node.kids[1], vars, text);
      std::int64_t r = 0;
      bool overflow = false;
      if (op == "+") overflow = __builtin_add_overflow(a, b, &r);
      else if (op == "-") overflow = __builtin_sub_overflow(a, b, &r);
      else if (op == "*") overflow = __builtin_mul_overflow(a, b, &r);
      if (op == "+" || op == "-" || op == "*") return checked(text, overflow, r);
      if (op == "/" || op == "%") {
        if (b == 0) eval_fail(text, "division by zero");
        return op == "/" ? a / b : a % b;
      }
      if (op == "==") return a == b;
      if (op == "!=") return a != b;
      if (op == "<") return a < b;
      if (op == ">") return a > b;
      if (op == "<=") return a <= b;
      if (op == ">=") return a >= b;
      eval_fail(text, "unknown operator " + op);
    }
    case Kind::call: {
      std::vector<std::int64_t> args;
      for (const auto& kid : node.kids) args.push_back(eval_node(*kid, vars, text));
      const std::string& f = node.name;
      if (f == "ceil_div" || f == "round_up") {
        if (args[1] <= 0) eval_fail(text, f + " needs a positive divisor");
        const std::int64_t q = args[0] / args[1] + (args[0] % args[1] > 0 ? 1 : 0);
        if (f == "ceil_div") return q;
        std::int64_t r = 0;
        const bool overflow = __builtin_mul_overflow(q, args[1], &r);
        return checked(text, overflow, r);
      }
      if (f == "min") return std::min(args[0], args[1]);
      if (f == "max") return std::max(args[0], args[1]);
      if (f == "abs") return args[0] < 0 ? -args[0] : args[0];
      if (f == "log2") {
        if (args[0] <= 0) eval_fail(text, "log2 of a non-positive value");
        return 63 - __builtin_clzll(static_cast<unsigned long long>(args[0]));
      }
      eval_fail(text, "unknown function " + f);
    }
  }
  eval_fail(text, "bad expression node");
}

void collect(const Expr::Node& node, std::set<std::string>& out) {
  if (node.kind == Kind::variable) out.insert(node.name);
  for (const auto& kid : node.kids) collect(*kid, out);
}

}  // namespace

Expr Expr::parse(const std::string& text) {
  Expr expr;
  expr.text_ = text;
  expr.root_ = Parser(expr.text_).parse_all();
  return expr;
}

std::int64_t Expr::eval(const Vars& vars) const {
  if (!root_) throw ExprError("empty expression");
  return eval_node(*root_, vars, text_);
}

std::vector<std::string> Expr::variables() const {
  std::set<std::string> names;
  if (root_) collect(*root_, names);
  return {names.begin(), names.end()};
}

}  // namespace tiletune

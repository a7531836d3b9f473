#include "tiletune/expr.hpp"

#include <algorithm>
#include <cctype>
#include <limits>
#include <set>

namespace tiletune {

namespace {

enum class Op { add, sub, mul, div, mod, eq, ne, lt, gt, le, ge, logical_and, logical_or };

}  // namespace

struct Expr::Node {
  // A binary node is a chain of one precedence level, evaluated left to right: kids[0] ops[0] kids[1] ops[1]
  // kids[2] ... ("a - b + c" is one node), so a long flat expression is a loop, not a deep tree.
  enum class Kind { number, variable, unary, binary, ternary, call } kind;
  std::int64_t value = 0;
  std::string name;  // variable, unary operator or function name
  std::vector<std::shared_ptr<const Node>> kids;
  std::vector<Op> ops;  // binary: kids.size() - 1 operators
};

namespace {

using NodePtr = std::shared_ptr<const Expr::Node>;
using Kind = Expr::Node::Kind;
constexpr std::int64_t int64_min = std::numeric_limits<std::int64_t>::min();

// Parentheses, unary operators, ternaries and function arguments each open a level of nesting. Parsing,
// evaluating and destroying an expression recurse a few frames per level, so the bound keeps hostile input
// off the end of the stack.
constexpr int max_depth = Expr::max_depth;
// Expressions longer than this are shown cut in error messages.
constexpr std::size_t max_shown = 160;

// The expression as an error message shows it: one line (control characters escaped), cut when long.
std::string shown(const std::string& text) {
  std::string out;
  for (std::size_t i = 0; i < text.size() && i < max_shown; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      static const char hex[] = "0123456789abcdef";
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  if (text.size() > max_shown) out += "... (" + std::to_string(text.size()) + " characters)";
  return out;
}

const char* op_text(Op op) {
  switch (op) {
    case Op::add:
      return "+";
    case Op::sub:
      return "-";
    case Op::mul:
      return "*";
    case Op::div:
      return "/";
    case Op::mod:
      return "%";
    case Op::eq:
      return "==";
    case Op::ne:
      return "!=";
    case Op::lt:
      return "<";
    case Op::gt:
      return ">";
    case Op::le:
      return "<=";
    case Op::ge:
      return ">=";
    case Op::logical_and:
      return "&&";
    case Op::logical_or:
      return "||";
  }
  return "?";
}

// Binary operators and their precedence levels, lowest first. A table outside the parser, so that the
// recursive parse_binary's frame stays small.
struct BinaryOp {
  const char* text;
  Op op;
  int level;
};
constexpr BinaryOp binary_ops[] = {{"||", Op::logical_or, 0}, {"&&", Op::logical_and, 1}, {"==", Op::eq, 2},
                                   {"!=", Op::ne, 2},         {"<=", Op::le, 3},          {">=", Op::ge, 3},
                                   {"<", Op::lt, 3},          {">", Op::gt, 3},           {"+", Op::add, 4},
                                   {"-", Op::sub, 4},         {"*", Op::mul, 5},          {"/", Op::div, 5},
                                   {"%", Op::mod, 5}};
constexpr int binary_levels = 6;

// A recursive-descent parser. The functions on the recursive path (parse_ternary, parse_binary, parse_unary,
// parse_primary, parse_call) keep only node pointers in their frames: messages are built, literals read and
// nodes made in helpers that are not inlined, so that even a sanitizer build needs little stack per level.
class Parser {
 public:
  explicit Parser(const std::string& text) : text_(text) {}

  NodePtr parse_all() {
    NodePtr node = parse_ternary();
    skip_space();
    if (pos_ != text_.size()) fail_unexpected();
    return node;
  }

 private:
  // One level of nesting for as long as it lives; more than max_depth is an error.
  class Nest {
   public:
    explicit Nest(Parser& p) : p_(p) {
      if (++p_.depth_ > max_depth) p_.fail_too_deep();
    }
    ~Nest() { --p_.depth_; }
    Nest(const Nest&) = delete;
    Nest& operator=(const Nest&) = delete;

   private:
    Parser& p_;
  };

  [[noreturn]] [[gnu::noinline]] void fail(const std::string& what) const {
    throw ExprError("in expression '" + shown(text_) + "': " + what + " at offset " + std::to_string(pos_));
  }
  [[noreturn]] [[gnu::noinline]] void fail_unexpected() const {
    if (pos_ >= text_.size()) fail("unexpected end");
    fail("unexpected '" + shown(text_.substr(pos_, 1)) + "'");
  }
  [[noreturn]] [[gnu::noinline]] void fail_too_deep() const {
    fail("nested more than " + std::to_string(max_depth) + " levels deep");
  }
  [[gnu::noinline]] void expect(const char* op, const char* what) {
    if (!accept(op)) fail(what);
  }
  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  [[gnu::noinline]] bool accept(const char* op) {
    skip_space();
    const std::string_view o(op);
    if (text_.compare(pos_, o.size(), o) != 0) return false;
    // Keep "<" from eating the first half of "<=", "&" of "&&", and so on.
    if (o.size() == 1 && pos_ + 1 < text_.size()) {
      const char next = text_[pos_ + 1];
      if ((o == "<" || o == ">" || o == "!" || o == "=") && next == '=') return false;
      if (o == "&" && next == '&') return false;
      if (o == "|" && next == '|') return false;
    }
    pos_ += o.size();
    return true;
  }
  // The binary operator of this precedence level at the cursor (consumed), or nullptr.
  [[gnu::noinline]] const BinaryOp* accept_binary(int level) {
    for (const BinaryOp& b : binary_ops)
      if (b.level == level && accept(b.text)) return &b;
    return nullptr;
  }
  [[gnu::noinline]] static NodePtr make(Kind kind, const char* name, NodePtr& a, NodePtr* b = nullptr,
                                        NodePtr* c = nullptr) {
    auto node = std::make_shared<Expr::Node>();
    node->kind = kind;
    node->name = name;
    for (NodePtr* kid : {&a, b, c})
      if (kid) node->kids.push_back(std::move(*kid));
    return node;
  }
  [[gnu::noinline]] static void extend(std::shared_ptr<Expr::Node>& chain, NodePtr& first, Op op,
                                       NodePtr& next) {
    if (!chain) {
      chain = std::make_shared<Expr::Node>();
      chain->kind = Kind::binary;
      chain->kids.push_back(std::move(first));
    }
    chain->ops.push_back(op);
    chain->kids.push_back(std::move(next));
  }

  NodePtr parse_ternary() {
    NodePtr cond = parse_binary(0);
    if (!accept("?")) return cond;
    const Nest nest(*this);
    NodePtr yes = parse_ternary();
    expect(":", "expected ':'");
    NodePtr no = parse_ternary();
    return make(Kind::ternary, "?", cond, &yes, &no);
  }

  // Binary operators by precedence level, lowest first; each level left-associative, as one chain node.
  NodePtr parse_binary(int level) {
    if (level == binary_levels) return parse_unary();
    NodePtr first = parse_binary(level + 1);
    std::shared_ptr<Expr::Node> chain;
    while (const BinaryOp* op = accept_binary(level)) {
      NodePtr next = parse_binary(level + 1);
      extend(chain, first, op->op, next);
    }
    if (!chain) return first;
    return chain;
  }

  NodePtr parse_unary() {
    const char* op = accept("-") ? "-" : accept("!") ? "!" : accept("+") ? "+" : nullptr;
    if (!op) return parse_primary();
    const Nest nest(*this);
    NodePtr operand = parse_unary();
    if (*op == '+') return operand;
    return make(Kind::unary, op, operand);
  }

  NodePtr parse_primary() {
    skip_space();
    if (pos_ >= text_.size()) fail_unexpected();
    const auto c = static_cast<unsigned char>(text_[pos_]);
    if (c == '(') {
      ++pos_;
      const Nest nest(*this);
      NodePtr inner = parse_ternary();
      expect(")", "expected ')'");
      return inner;
    }
    if (std::isdigit(c)) return parse_number();
    if (std::isalpha(c) || c == '_') return parse_name();
    fail_unexpected();
  }

  [[gnu::noinline]] NodePtr parse_number() {
    const std::size_t start = pos_;
    std::int64_t value = 0;
    bool too_large = false;
    while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
      const int digit = text_[pos_] - '0';
      if (value > (std::numeric_limits<std::int64_t>::max() - digit) / 10) too_large = true;
      if (!too_large) value = value * 10 + digit;
      ++pos_;
    }
    if (too_large) {
      const std::string literal = text_.substr(start, pos_ - start);
      pos_ = start;
      fail("integer literal " + shown(literal) + " does not fit in 64 bits");
    }
    auto node = std::make_shared<Expr::Node>();
    node->kind = Kind::number;
    node->value = value;
    return node;
  }

  // A variable, or a function call (recursing into its arguments).
  [[gnu::noinline]] NodePtr parse_name() {
    const std::size_t start = pos_;
    while (pos_ < text_.size() &&
           (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_'))
      ++pos_;
    auto node = std::make_shared<Expr::Node>();
    node->name = text_.substr(start, pos_ - start);
    if (!accept("(")) {
      node->kind = Kind::variable;
      return node;
    }
    node->kind = Kind::call;
    const std::size_t arity = function_arity(node->name, start);
    if (!accept(")")) {
      const Nest nest(*this);
      do node->kids.push_back(parse_ternary());
      while (accept(","));
      expect(")", "expected ')' after the arguments");
    }
    if (node->kids.size() != arity) fail_arity(node->name, arity, node->kids.size());
    return node;
  }

  [[gnu::noinline]] std::size_t function_arity(const std::string& name, std::size_t start) {
    static const std::map<std::string, std::size_t> arity = {{"ceil_div", 2}, {"round_up", 2}, {"min", 2},
                                                             {"max", 2},      {"abs", 1},      {"log2", 1}};
    const auto it = arity.find(name);
    if (it != arity.end()) return it->second;
    pos_ = start;
    fail("unknown function '" + shown(name) + "'");
  }
  [[noreturn]] [[gnu::noinline]] void fail_arity(const std::string& name, std::size_t want, std::size_t got) {
    fail(name + " takes " + std::to_string(want) + " arguments, got " + std::to_string(got));
  }

  const std::string& text_;
  std::size_t pos_ = 0;
  int depth_ = 0;
};

// Evaluates one parsed expression; every step that C++ leaves undefined or that traps is an ExprError. As in
// the parser, only eval recurses, and the rest is kept out of its frame.
class Evaluator {
 public:
  Evaluator(const Vars& vars, const std::string& text) : vars_(vars), text_(text) {}

  std::int64_t eval(const Expr::Node& node) const {
    switch (node.kind) {
      case Kind::number:
        return node.value;
      case Kind::variable:
        return variable(node.name);
      case Kind::unary:
        return unary(node.name, eval(*node.kids[0]));
      case Kind::ternary:
        return eval(*node.kids[0]) != 0 ? eval(*node.kids[1]) : eval(*node.kids[2]);
      case Kind::binary: {
        std::int64_t a = eval(*node.kids[0]);
        for (std::size_t i = 0; i < node.ops.size(); ++i) {
          const Op op = node.ops[i];
          // && and || do not evaluate their right side when the left decides.
          if (op == Op::logical_and) {
            a = a != 0 && eval(*node.kids[i + 1]) != 0;
          } else if (op == Op::logical_or) {
            a = a != 0 || eval(*node.kids[i + 1]) != 0;
          } else {
            a = binary(op, a, eval(*node.kids[i + 1]));
          }
        }
        return a;
      }
      case Kind::call: {
        const std::int64_t a = node.kids.empty() ? 0 : eval(*node.kids[0]);
        const std::int64_t b = node.kids.size() < 2 ? 0 : eval(*node.kids[1]);
        return call(node.name, a, b);
      }
    }
    fail("bad expression node");
  }

 private:
  [[noreturn]] [[gnu::noinline]] void fail(const std::string& what) const {
    throw ExprError("in expression '" + shown(text_) + "': " + what);
  }
  [[noreturn]] [[gnu::noinline]] void overflow(const std::string& step) const {
    fail("integer overflow: " + step + " does not fit in 64 bits");
  }
  static std::string step(std::int64_t a, const char* op, std::int64_t b) {
    return std::to_string(a) + " " + op + " " + std::to_string(b);
  }

  [[gnu::noinline]] std::int64_t variable(const std::string& name) const {
    const auto it = vars_.find(name);
    if (it == vars_.end()) fail("unknown variable '" + shown(name) + "'");
    return it->second;
  }

  [[gnu::noinline]] std::int64_t unary(const std::string& op, std::int64_t v) const {
    if (op == "!") return v == 0 ? 1 : 0;
    if (v == int64_min) overflow("-(" + std::to_string(v) + ")");
    return -v;
  }

  [[gnu::noinline]] std::int64_t binary(Op op, std::int64_t a, std::int64_t b) const {
    switch (op) {
      case Op::add:
      case Op::sub:
      case Op::mul:
        return arithmetic(op, a, b);
      case Op::div:
      case Op::mod:
        return quotient(op, a, b);
      default:
        return comparison(op, a, b);
    }
  }

  // + - *, with their overflow checked.
  [[gnu::noinline]] std::int64_t arithmetic(Op op, std::int64_t a, std::int64_t b) const {
    std::int64_t r = 0;
    if (op == Op::add) {
      if (__builtin_add_overflow(a, b, &r)) overflow(step(a, "+", b));
    } else if (op == Op::sub) {
      if (__builtin_sub_overflow(a, b, &r)) overflow(step(a, "-", b));
    } else if (__builtin_mul_overflow(a, b, &r)) {
      overflow(step(a, "*", b));
    }
    return r;
  }

  // / and %.
  [[gnu::noinline]] std::int64_t quotient(Op op, std::int64_t a, std::int64_t b) const {
    if (b == 0) fail("division by zero: " + step(a, op_text(op), b));
    // The quotient 2^63 does not fit; C++ leaves both / and % undefined there (x86 traps).
    if (a == int64_min && b == -1) overflow(step(a, op_text(op), b));
    return op == Op::div ? a / b : a % b;
  }

  // Comparisons and the logical operators, 0 or 1.
  [[gnu::noinline]] std::int64_t comparison(Op op, std::int64_t a, std::int64_t b) const {
    switch (op) {
      case Op::eq:
        return a == b;
      case Op::ne:
        return a != b;
      case Op::lt:
        return a < b;
      case Op::gt:
        return a > b;
      case Op::le:
        return a <= b;
      case Op::ge:
        return a >= b;
      case Op::logical_and:
        return a != 0 && b != 0;
      case Op::logical_or:
        return a != 0 || b != 0;
      default:
        break;
    }
    fail("unknown operator");
  }

  [[gnu::noinline]] std::int64_t call(const std::string& f, std::int64_t a, std::int64_t b) const {
    const auto args = [&] {
      return std::string("(").append(std::to_string(a)).append(", ").append(std::to_string(b)).append(")");
    };
    if (f == "ceil_div" || f == "round_up") {
      if (b <= 0) fail(f + args() + ": the divisor must be positive");
      // b > 0: a / b cannot overflow, and a / b + 1 only when b == 1, where the remainder is 0.
      const std::int64_t q = a / b + (a % b > 0 ? 1 : 0);
      if (f == "ceil_div") return q;
      std::int64_t r = 0;
      if (__builtin_mul_overflow(q, b, &r)) overflow(f + args());
      return r;
    }
    if (f == "min") return std::min(a, b);
    if (f == "max") return std::max(a, b);
    if (f == "abs") {
      if (a == int64_min) overflow("abs(" + std::to_string(a) + ")");
      return a < 0 ? -a : a;
    }
    if (f == "log2") {
      if (a <= 0) fail("log2(" + std::to_string(a) + "): the argument must be positive");
      return 63 - __builtin_clzll(static_cast<unsigned long long>(a));
    }
    fail("unknown function " + f);
  }

  const Vars& vars_;
  const std::string& text_;
};

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
  return Evaluator(vars, text_).eval(*root_);
}

std::vector<std::string> Expr::variables() const {
  std::set<std::string> names;
  if (root_) collect(*root_, names);
  return {names.begin(), names.end()};
}

}  // namespace tiletune

#include "tiletune/t1.hpp"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <set>
#include <sstream>

#include "tiletune/element_type.hpp"
#include "tiletune/expr.hpp"
#include "tiletune/family.hpp"
#include "tiletune/json_depth.hpp"
#include "tiletune/macro_name.hpp"
#include "tiletune/utf8.hpp"

namespace tiletune {

namespace {

using nlohmann::json;
using nlohmann::ordered_json;

// Bounds on hostile input: T1 expressions are a line long, so anything far larger is refused, not evaluated.
constexpr std::size_t kMaxExpressionText = 1000;
constexpr std::size_t kMaxTranslatedText = 20000;
constexpr int kMaxNesting = 64;
constexpr std::size_t kMaxListLength = 1'000'000;
constexpr std::uint64_t kMaxSteps = 20'000'000;
constexpr std::size_t kMaxMembers = 256;  // "x in [...]" becomes one comparison per element
constexpr std::int64_t kInt64Min = std::numeric_limits<std::int64_t>::min();
constexpr std::int64_t kInt64Max = std::numeric_limits<std::int64_t>::max();

// Why a Python expression cannot be evaluated or translated; the caller adds the file and the field.
struct PyError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

[[noreturn]] void refuse(const std::string& why) { throw PyError(why); }

// Text as one line of a message: control characters escaped, long text cut.
std::string shown(const std::string& text, std::size_t max = 120) {
  std::string out;
  for (std::size_t i = 0; i < text.size() && i < max; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c == 0x7f) {
      static const char hex[] = "0123456789abcdef";
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  if (text.size() > max) out += "... (" + std::to_string(text.size()) + " characters)";
  return out;
}

// ---- Python: tokens ----

enum class Tok { end, number, name, op };

struct Token {
  Tok kind = Tok::end;
  std::string text;
  std::int64_t value = 0;
  std::size_t pos = 0;
};

// A number literal's base, read from its prefix (0x, 0o, 0b), which is skipped.
int read_base(const std::string& s, std::size_t& i) {
  if (s[i] != '0' || i + 1 >= s.size() || !std::strchr("xXoObB", s[i + 1])) return 10;
  const int base = std::tolower(s[i + 1]) == 'x' ? 16 : std::tolower(s[i + 1]) == 'o' ? 8 : 2;
  i += 2;
  return base;
}

bool in_number(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.'; }

bool starts_fraction(char c) { return c == '.' || c == 'e' || c == 'E' || c == 'j' || c == 'J'; }

// A digit's value in any base up to 36; 99 for what is no digit.
int digit_value(char c) {
  return std::isdigit(static_cast<unsigned char>(c))   ? c - '0'
         : std::isalpha(static_cast<unsigned char>(c)) ? std::tolower(c) - 'a' + 10
                                                       : 99;
}

// A float or complex literal (the decimal number from `start` goes on at `i`), named whole in the message.
[[noreturn]] void refuse_fraction(const std::string& s, std::size_t start, std::size_t i) {
  std::size_t end = i + 1;
  while (end < s.size() && (std::isalnum(static_cast<unsigned char>(s[end])) || s[end] == '.' ||
                            ((s[end] == '+' || s[end] == '-') && std::tolower(s[end - 1]) == 'e')))
    ++end;
  refuse("'" + shown(s.substr(start, end - start)) +
         "' is not an integer: tiletune's parameters and expressions are integers");
}

// The digits of the number that starts at `start`, read from `i` on, without the underscores.
std::string read_digits(const std::string& s, std::size_t& i, std::size_t start, int base) {
  std::string digits;
  for (; i < s.size() && in_number(s[i]); ++i) {
    const char c = s[i];
    if (c == '_') continue;
    if (base == 10 && starts_fraction(c)) refuse_fraction(s, start, i);
    if (digit_value(c) >= base) refuse("malformed number '" + shown(s.substr(start, i - start + 1)) + "'");
    digits += c;
  }
  return digits;
}

std::int64_t read_number(const std::string& s, std::size_t& i) {
  const std::size_t start = i;
  const int base = read_base(s, i);
  const std::string digits = read_digits(s, i, start, base);
  if (digits.empty()) refuse("malformed number '" + shown(s.substr(start, i - start)) + "'");
  if (base == 10 && digits.size() > 1 && digits[0] == '0' &&
      digits.find_first_not_of('0') != std::string::npos)
    refuse("'" + digits + "': Python does not allow leading zeros");
  std::int64_t value = 0;
  for (const char c : digits) {
    const int d = digit_value(c);
    if (value > (kInt64Max - d) / base)
      refuse("the integer " + shown(s.substr(start, i - start)) + " does not fit in 64 bits");
    value = value * base + d;
  }
  return value;
}

bool starts_number(const std::string& s, std::size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  return std::isdigit(c) ||
         (c == '.' && i + 1 < s.size() && std::isdigit(static_cast<unsigned char>(s[i + 1])));
}

[[noreturn]] void refuse_character(unsigned char c, std::size_t i) {
  if (c == '.') refuse("attribute access ('.') is not part of the Python that T1 expressions use");
  if (c == '{' || c == '}') refuse("sets and dicts have no counterpart in tiletune's expressions");
  if (c == '=') refuse("'=' (assignment or keyword argument) has no counterpart here");
  refuse("unexpected character '" + shown(std::string(1, static_cast<char>(c))) + "' at offset " +
         std::to_string(i));
}

// The operator at s[i]: two characters where they make one, else one.
std::string operator_at(const std::string& s, std::size_t i) {
  static const char* two[] = {"**", "//", "==", "!=", "<=", ">=", "<<", ">>"};
  std::string text;
  for (const char* op : two)
    if (s.compare(i, 2, op) == 0) text = op;
  if (!text.empty()) return text;
  const auto c = static_cast<unsigned char>(s[i]);
  if (!std::strchr("+-*/%<>()[],~&|^:", c) || c == 0) refuse_character(c, i);
  return std::string(1, static_cast<char>(c));
}

// The token at s[i] (not a space), with i moved past it.
Token read_token(const std::string& s, std::size_t& i) {
  const auto c = static_cast<unsigned char>(s[i]);
  Token t;
  t.pos = i;
  if (starts_number(s, i)) {
    t.kind = Tok::number;
    t.value = read_number(s, i);
    t.text = s.substr(t.pos, i - t.pos);
  } else if (std::isalpha(c) || c == '_') {
    t.kind = Tok::name;
    while (i < s.size() && (std::isalnum(static_cast<unsigned char>(s[i])) || s[i] == '_')) ++i;
    t.text = s.substr(t.pos, i - t.pos);
  } else if (c == '\'' || c == '"') {
    refuse("strings have no counterpart in tiletune's integer expressions");
  } else {
    t.kind = Tok::op;
    t.text = operator_at(s, i);
    i += t.text.size();
  }
  return t;
}

std::vector<Token> tokenize(const std::string& s) {
  if (s.size() > kMaxExpressionText)
    refuse("longer than " + std::to_string(kMaxExpressionText) + " characters");
  std::vector<Token> out;
  std::size_t i = 0;
  while (i < s.size()) {
    const char c = s[i];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r')
      ++i;
    else
      out.push_back(read_token(s, i));
  }
  Token end;
  end.pos = s.size();
  out.push_back(end);
  return out;
}

// ---- Python: syntax ----

struct Py {
  enum class Kind {
    number,
    name,
    unary,
    chain,
    compare,
    boolop,
    ifexp,
    power,
    call,
    list,
    comprehension,
    subscript
  };
  Kind kind = Kind::number;
  std::int64_t value = 0;
  bool is_bool = false;  // True, False
  std::string text;      // name, unary operator, "and"/"or", function, comprehension variable
  // chain, compare, boolop: the operands; ifexp: body, condition, else; power: base, exponent; call:
  // arguments; comprehension: element, iterable, conditions...; subscript: value, index.
  std::vector<std::unique_ptr<Py>> kids;
  std::vector<std::string> ops;  // chain and compare: between kids[i] and kids[i + 1]
};
using PyPtr = std::unique_ptr<Py>;

PyPtr make_node(Py::Kind kind, std::string text = "") {
  auto n = std::make_unique<Py>();
  n->kind = kind;
  n->text = std::move(text);
  return n;
}

// A recursive-descent parser of Python's expression grammar, as far as T1 files use it (numbers, names,
// arithmetic, comparisons, boolean operators, conditional expressions, calls, lists and comprehensions).
class PyParser {
 public:
  explicit PyParser(const std::string& text) : tokens_(tokenize(text)) {}

  PyPtr parse() {
    if (peek().kind == Tok::end) refuse("empty expression");
    PyPtr n = expression();
    if (peek().kind != Tok::end) unexpected();
    return n;
  }

 private:
  // One level of nesting while alive; parsing, evaluating and translating recurse per level.
  class Nest {
   public:
    explicit Nest(PyParser& p) : p_(p) {
      if (++p_.depth_ > kMaxNesting)
        refuse("nested more than " + std::to_string(kMaxNesting) + " levels deep");
    }
    ~Nest() { --p_.depth_; }
    Nest(const Nest&) = delete;
    Nest& operator=(const Nest&) = delete;

   private:
    PyParser& p_;
  };

  const Token& peek(std::size_t ahead = 0) const {
    return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)];
  }
  bool is_op(const char* op, std::size_t ahead = 0) const {
    return peek(ahead).kind == Tok::op && peek(ahead).text == op;
  }
  bool is_word(const char* word, std::size_t ahead = 0) const {
    return peek(ahead).kind == Tok::name && peek(ahead).text == word;
  }
  bool accept_op(const char* op) {
    if (!is_op(op)) return false;
    ++pos_;
    return true;
  }
  bool accept_word(const char* word) {
    if (!is_word(word)) return false;
    ++pos_;
    return true;
  }
  void expect_op(const char* op) {
    if (!accept_op(op)) {
      if (peek().kind == Tok::end) refuse(std::string("expected '") + op + "' at the end");
      refuse(std::string("expected '") + op + "' at offset " + std::to_string(peek().pos) + ", found '" +
             shown(peek().text) + "'");
    }
  }
  [[noreturn]] void unexpected() const {
    if (peek().kind == Tok::end) refuse("unexpected end");
    refuse("unexpected '" + shown(peek().text) + "' at offset " + std::to_string(peek().pos));
  }

  PyPtr expression() {
    if (is_word("lambda")) refuse("lambda has no counterpart in tiletune's expressions");
    PyPtr body = or_test();
    if (!accept_word("if")) return body;
    const Nest nest(*this);
    PyPtr cond = or_test();
    if (!accept_word("else")) refuse("expected 'else' in a conditional expression");
    PyPtr orelse = expression();
    PyPtr n = make_node(Py::Kind::ifexp);
    n->kids.push_back(std::move(body));
    n->kids.push_back(std::move(cond));
    n->kids.push_back(std::move(orelse));
    return n;
  }

  PyPtr boolean(const char* word, bool is_and) {
    PyPtr first = is_and ? not_test() : boolean("and", true);
    if (!is_word(word)) return first;
    PyPtr n = make_node(Py::Kind::boolop, word);
    n->kids.push_back(std::move(first));
    while (accept_word(word)) n->kids.push_back(is_and ? not_test() : boolean("and", true));
    return n;
  }
  PyPtr or_test() { return boolean("or", false); }

  PyPtr not_test() {
    if (!accept_word("not")) return comparison();
    const Nest nest(*this);
    PyPtr n = make_node(Py::Kind::unary, "not");
    n->kids.push_back(not_test());
    return n;
  }

  std::string comparison_op() {
    static const char* ops[] = {"==", "!=", "<=", ">=", "<", ">"};
    for (const char* op : ops)
      if (accept_op(op)) return op;
    if (accept_word("in")) return "in";
    if (is_word("not") && is_word("in", 1)) {
      pos_ += 2;
      return "not in";
    }
    if (accept_word("is")) return accept_word("not") ? "is not" : "is";
    return "";
  }

  PyPtr comparison() {
    PyPtr first = chain(0);
    std::string op = comparison_op();
    if (op.empty()) return first;
    PyPtr n = make_node(Py::Kind::compare);
    n->kids.push_back(std::move(first));
    for (; !op.empty(); op = comparison_op()) {
      n->ops.push_back(op);
      n->kids.push_back(chain(0));
    }
    return n;
  }

  // The binary operators from '|' to '*', one precedence level each, lowest first; each level is one flat
  // node, so that a long sum is a loop, not a deep tree.
  PyPtr chain(int level) {
    static const std::vector<std::vector<const char*>> levels = {
        {"|"}, {"^"}, {"&"}, {"<<", ">>"}, {"+", "-"}, {"*", "//", "/", "%"}};
    if (level == static_cast<int>(levels.size())) return factor();
    PyPtr first = chain(level + 1);
    PyPtr n;
    for (;;) {
      const char* found = nullptr;
      for (const char* op : levels[static_cast<std::size_t>(level)])
        if (is_op(op)) found = op;
      if (!found) break;
      ++pos_;
      if (!n) {
        n = make_node(Py::Kind::chain);
        n->kids.push_back(std::move(first));
      }
      n->ops.push_back(found);
      n->kids.push_back(chain(level + 1));
    }
    return n ? std::move(n) : std::move(first);
  }

  PyPtr factor() {
    for (const char* op : {"-", "+", "~"})
      if (accept_op(op)) {
        const Nest nest(*this);
        PyPtr n = make_node(Py::Kind::unary, op);
        n->kids.push_back(factor());
        return n;
      }
    return power();
  }

  PyPtr power() {
    PyPtr base = primary();
    if (!accept_op("**")) return base;
    const Nest nest(*this);
    PyPtr n = make_node(Py::Kind::power);
    n->kids.push_back(std::move(base));
    n->kids.push_back(factor());
    return n;
  }

  PyPtr primary() {
    PyPtr a = atom();
    for (;;) {
      if (accept_op("(")) {
        if (a->kind != Py::Kind::name) refuse("only named functions can be called");
        const Nest nest(*this);
        PyPtr call = make_node(Py::Kind::call, a->text);
        if (!accept_op(")")) {
          call->kids.push_back(expression());
          if (is_word("for")) {  // min(x for x in ...): a generator as the only argument
            call->kids.back() = comprehension(std::move(call->kids.back()), ")");
          } else {
            while (accept_op(",")) {
              if (is_op(")")) break;
              call->kids.push_back(expression());
            }
            expect_op(")");
          }
        }
        a = std::move(call);
      } else if (accept_op("[")) {
        const Nest nest(*this);
        PyPtr sub = make_node(Py::Kind::subscript);
        sub->kids.push_back(std::move(a));
        sub->kids.push_back(expression());
        if (is_op(":")) refuse("slices have no counterpart in tiletune's expressions");
        expect_op("]");
        a = std::move(sub);
      } else {
        return a;
      }
    }
  }

  // [ELEMENT for VAR in ITERABLE if COND ...], the element already read.
  PyPtr comprehension(PyPtr element, const char* close) {
    accept_word("for");
    if (peek().kind != Tok::name || !is_identifier(peek().text))
      refuse("a comprehension must bind one name ('for i in ...')");
    PyPtr n = make_node(Py::Kind::comprehension, peek().text);
    ++pos_;
    if (is_op(",")) refuse("a comprehension must bind one name, not a tuple");
    if (!accept_word("in")) refuse("expected 'in' after 'for " + n->text + "'");
    n->kids.push_back(std::move(element));
    n->kids.push_back(or_test());
    while (accept_word("if")) n->kids.push_back(or_test());
    if (is_word("for")) refuse("nested 'for' in a comprehension is not supported");
    expect_op(close);
    return n;
  }

  PyPtr atom() {
    const Token& t = peek();
    if (t.kind == Tok::number) {
      PyPtr n = make_node(Py::Kind::number);
      n->value = t.value;
      ++pos_;
      return n;
    }
    if (t.kind == Tok::name) {
      static const std::set<std::string> keywords = {"and", "or",     "not",  "if",    "else",  "for",  "in",
                                                     "is",  "lambda", "None", "await", "yield", "async"};
      if (t.text == "True" || t.text == "False") {
        PyPtr n = make_node(Py::Kind::number);
        n->value = t.text == "True";
        n->is_bool = true;
        ++pos_;
        return n;
      }
      if (t.text == "None") refuse("None has no counterpart in tiletune's expressions");
      if (keywords.count(t.text)) unexpected();
      ++pos_;
      return make_node(Py::Kind::name, t.text);
    }
    const bool paren = is_op("(");
    if (!paren && !is_op("[")) unexpected();
    ++pos_;
    const Nest nest(*this);
    const char* close = paren ? ")" : "]";
    PyPtr list = make_node(Py::Kind::list);
    if (accept_op(close)) return list;
    PyPtr first = expression();
    if (is_word("for")) return comprehension(std::move(first), close);
    if (paren && accept_op(")")) return first;  // parentheses around an expression
    list->kids.push_back(std::move(first));
    while (accept_op(",")) {
      if (is_op(close)) break;
      list->kids.push_back(expression());
    }
    expect_op(close);
    return list;
  }

  std::vector<Token> tokens_;
  std::size_t pos_ = 0;
  int depth_ = 0;
};

PyPtr parse_python(const std::string& text) { return PyParser(text).parse(); }

bool reads_name(const Py& n, const std::string& name) {
  if (n.kind == Py::Kind::name && n.text == name) return true;
  return std::any_of(n.kids.begin(), n.kids.end(), [&](const PyPtr& kid) { return reads_name(*kid, name); });
}

// ---- Python: integer arithmetic, with Python's meaning and every step checked ----

[[noreturn]] void overflow(std::int64_t a, const std::string& op, std::int64_t b) {
  refuse("integer overflow: " + std::to_string(a) + " " + op + " " + std::to_string(b) +
         " does not fit in 64 bits");
}

std::int64_t py_floor_div(std::int64_t a, std::int64_t b) {
  if (b == 0) refuse("division by zero: " + std::to_string(a) + " // 0");
  if (a == kInt64Min && b == -1) overflow(a, "//", b);
  std::int64_t q = a / b;
  if (a % b != 0 && ((a < 0) != (b < 0))) --q;
  return q;
}

std::int64_t py_mod(std::int64_t a, std::int64_t b) {
  if (b == 0) refuse("modulo by zero: " + std::to_string(a) + " % 0");
  if (b == -1) return 0;
  std::int64_t m = a % b;
  if (m != 0 && ((m < 0) != (b < 0))) m += b;
  return m;
}

std::int64_t py_power(std::int64_t base, std::int64_t exponent) {
  if (exponent < 0)
    refuse("a negative exponent gives a float: " + std::to_string(base) + " ** " + std::to_string(exponent));
  std::int64_t result = 1;
  const std::int64_t b0 = base, e0 = exponent;
  while (exponent > 0) {
    if ((exponent & 1) && __builtin_mul_overflow(result, base, &result)) overflow(b0, "**", e0);
    exponent >>= 1;
    if (exponent > 0 && __builtin_mul_overflow(base, base, &base)) overflow(b0, "**", e0);
  }
  return result;
}

std::int64_t py_checked(const std::string& op, std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  const bool overflows = op == "+"   ? __builtin_add_overflow(a, b, &r)
                         : op == "-" ? __builtin_sub_overflow(a, b, &r)
                                     : __builtin_mul_overflow(a, b, &r);
  if (overflows) overflow(a, op, b);
  return r;
}

std::int64_t py_shift(const std::string& op, std::int64_t a, std::int64_t b) {
  if (b < 0) refuse("negative shift count: " + std::to_string(a) + " " + op + " " + std::to_string(b));
  if (op == ">>") return b > 63 ? (a < 0 ? -1 : 0) : a >> b;
  if (a == 0) return 0;
  std::int64_t r = 0;
  if (b > 62 || __builtin_mul_overflow(a, std::int64_t{1} << b, &r)) overflow(a, op, b);
  return r;
}

std::int64_t py_binary(const std::string& op, std::int64_t a, std::int64_t b) {
  if (op == "+" || op == "-" || op == "*") return py_checked(op, a, b);
  if (op == "//") return py_floor_div(a, b);
  if (op == "%") return py_mod(a, b);
  if (op == "<<" || op == ">>") return py_shift(op, a, b);
  if (op == "&") return a & b;
  if (op == "|") return a | b;
  if (op == "^") return a ^ b;
  if (op == "/") refuse("'/' is true division, whose result is a float; use '//' for integers");
  refuse("unknown operator '" + op + "'");
}

bool py_compare(const std::string& op, std::int64_t a, std::int64_t b) {
  if (op == "==") return a == b;
  if (op == "!=") return a != b;
  if (op == "<") return a < b;
  if (op == "<=") return a <= b;
  if (op == ">") return a > b;
  if (op == ">=") return a >= b;
  refuse("'" + op + "' compares identity, which has no counterpart in tiletune's expressions");
}

// ---- Python: evaluation of constant expressions ----

struct PyValue {
  bool is_list = false;
  bool is_bool = false;
  std::int64_t number = 0;
  std::vector<std::int64_t> list;
};

PyValue number_value(std::int64_t v, bool is_bool = false) {
  PyValue out;
  out.number = v;
  out.is_bool = is_bool;
  return out;
}

PyValue list_value(std::vector<std::int64_t> v) {
  PyValue out;
  out.is_list = true;
  out.list = std::move(v);
  return out;
}

bool truthy(const PyValue& v) { return v.is_list ? !v.list.empty() : v.number != 0; }

// Evaluates an expression with the names it is given (numbers or lists), as Python would.
class PyEvaluator {
 public:
  explicit PyEvaluator(std::map<std::string, PyValue> names = {}) : names_(std::move(names)) {}

  std::int64_t number(const Py& n) {
    const PyValue v = eval(n);
    if (v.is_list) refuse("a list where a number is needed");
    return v.number;
  }
  std::vector<std::int64_t> list(const Py& n) {
    PyValue v = eval(n);
    if (!v.is_list) refuse("a number where a list is needed");
    return std::move(v.list);
  }

  PyValue eval(const Py& n) {
    charge(1);
    switch (n.kind) {
      case Py::Kind::number:
        return number_value(n.value, n.is_bool);
      case Py::Kind::name:
        return name(n.text);
      case Py::Kind::unary:
        return unary(n);
      case Py::Kind::chain:
        return chain(n);
      case Py::Kind::compare:
        return compare(n);
      case Py::Kind::boolop: {
        PyValue v = eval(*n.kids[0]);
        for (std::size_t i = 1; i < n.kids.size(); ++i) {
          if (truthy(v) != (n.text == "and")) return v;  // "and" stops at a false operand, "or" at a true one
          v = eval(*n.kids[i]);
        }
        return v;
      }
      case Py::Kind::ifexp:
        return truthy(eval(*n.kids[1])) ? eval(*n.kids[0]) : eval(*n.kids[2]);
      case Py::Kind::power:
        return number_value(py_power(number(*n.kids[0]), number(*n.kids[1])));
      case Py::Kind::call:
        return call(n);
      case Py::Kind::list: {
        std::vector<std::int64_t> out;
        for (const auto& kid : n.kids) out.push_back(number(*kid));
        return list_value(std::move(out));
      }
      case Py::Kind::comprehension:
        return comprehension(n);
      case Py::Kind::subscript: {
        const std::vector<std::int64_t> values = list(*n.kids[0]);
        std::int64_t i = number(*n.kids[1]);
        const auto size = static_cast<std::int64_t>(values.size());
        if (i < -size || i >= size) refuse("index " + std::to_string(i) + " is out of range");
        return number_value(values[static_cast<std::size_t>(i < 0 ? i + size : i)]);
      }
    }
    refuse("unknown expression");
  }

 private:
  PyValue name(const std::string& name) {
    for (auto it = locals_.rbegin(); it != locals_.rend(); ++it)
      if (it->first == name) return number_value(it->second);
    const auto it = names_.find(name);
    if (it == names_.end()) refuse("unknown name '" + shown(name) + "'");
    return it->second;
  }

  PyValue unary(const Py& n) {
    if (n.text == "not") return number_value(!truthy(eval(*n.kids[0])), true);
    const std::int64_t v = number(*n.kids[0]);
    if (n.text == "+") return number_value(v);
    if (n.text == "~") return number_value(~v);
    if (v == kInt64Min) refuse("integer overflow: -(" + std::to_string(v) + ") does not fit in 64 bits");
    return number_value(-v);
  }

  PyValue chain(const Py& n) {
    PyValue acc = eval(*n.kids[0]);
    for (std::size_t i = 0; i < n.ops.size(); ++i) {
      PyValue next = eval(*n.kids[i + 1]);
      if (acc.is_list && next.is_list && n.ops[i] == "+") {  // list concatenation
        if (acc.list.size() + next.list.size() > kMaxListLength) too_long();
        charge(acc.list.size() + next.list.size());
        acc.list.insert(acc.list.end(), next.list.begin(), next.list.end());
        continue;
      }
      if (acc.is_list || next.is_list) refuse("'" + n.ops[i] + "' of a list has no meaning here");
      acc = number_value(py_binary(n.ops[i], acc.number, next.number));
    }
    return acc;
  }

  PyValue compare(const Py& n) {
    PyValue left = eval(*n.kids[0]);
    for (std::size_t i = 0; i < n.ops.size(); ++i) {
      PyValue right = eval(*n.kids[i + 1]);
      const std::string& op = n.ops[i];
      bool holds = false;
      if (op == "in" || op == "not in") {
        if (!right.is_list || left.is_list)
          refuse("'" + op + "' needs a number on its left and a list on its right");
        charge(right.list.size());
        holds = std::find(right.list.begin(), right.list.end(), left.number) != right.list.end();
        if (op == "not in") holds = !holds;
      } else if (left.is_list || right.is_list) {
        if ((op != "==" && op != "!=") || !left.is_list || !right.is_list)
          refuse("'" + op + "' between a list and a number, or of lists, has no meaning here");
        holds = (left.list == right.list) == (op == "==");
      } else {
        holds = py_compare(op, left.number, right.number);
      }
      if (!holds) return number_value(0, true);
      left = std::move(right);
    }
    return number_value(1, true);
  }

  // Counts work: every node evaluated and every list element made or read, so that nested comprehensions
  // over long ranges end with an error instead of running for hours.
  void charge(std::uint64_t work) {
    steps_ += work;
    if (steps_ > kMaxSteps) refuse("takes more than " + std::to_string(kMaxSteps) + " steps to evaluate");
  }

  [[noreturn]] void too_long() const {
    refuse("a list of more than " + std::to_string(kMaxListLength) + " values");
  }

  PyValue call(const Py& n) {
    using Builtin = PyValue (PyEvaluator::*)(const Py&);
    static const std::pair<const char*, Builtin> builtins[] = {
        {"range", &PyEvaluator::range},  {"list", &PyEvaluator::sequence}, {"sorted", &PyEvaluator::sequence},
        {"len", &PyEvaluator::length},   {"min", &PyEvaluator::extreme},   {"max", &PyEvaluator::extreme},
        {"abs", &PyEvaluator::absolute}, {"int", &PyEvaluator::absolute},  {"sum", &PyEvaluator::sum}};
    for (const auto& [name, builtin] : builtins)
      if (n.text == name) return (this->*builtin)(n);
    refuse("unknown function '" + shown(n.text) + "'");
  }

  static void arity(const Py& n, std::size_t lo, std::size_t hi) {
    const std::size_t argc = n.kids.size();
    if (argc < lo || argc > hi)
      refuse(n.text + "() takes " +
             (lo == hi ? std::to_string(lo) : std::to_string(lo) + " to " + std::to_string(hi)) +
             " arguments, got " + std::to_string(argc));
  }

  // How many values range(start, stop, step) has; step is not zero.
  static __int128 range_count(std::int64_t start, std::int64_t stop, std::int64_t step) {
    const __int128 span =
        step > 0 ? static_cast<__int128>(stop) - start : static_cast<__int128>(start) - stop;
    const __int128 magnitude = step > 0 ? step : -static_cast<__int128>(step);
    return span <= 0 ? 0 : (span + magnitude - 1) / magnitude;
  }

  PyValue range(const Py& n) {
    arity(n, 1, 3);
    const std::size_t argc = n.kids.size();
    std::int64_t start = 0, stop = 0, step = 1;
    if (argc == 1) {
      stop = number(*n.kids[0]);
    } else {
      start = number(*n.kids[0]);
      stop = number(*n.kids[1]);
      if (argc == 3) step = number(*n.kids[2]);
    }
    if (step == 0) refuse("range() step must not be zero");
    const __int128 count = range_count(start, stop, step);
    if (count > static_cast<__int128>(kMaxListLength)) too_long();
    charge(static_cast<std::uint64_t>(count));
    std::vector<std::int64_t> out;
    out.reserve(static_cast<std::size_t>(count));
    for (__int128 k = 0; k < count; ++k) out.push_back(static_cast<std::int64_t>(start + k * step));
    return list_value(std::move(out));
  }

  // list() and sorted().
  PyValue sequence(const Py& n) {
    arity(n, 1, 1);
    std::vector<std::int64_t> values = list(*n.kids[0]);
    charge(values.size());
    if (n.text == "sorted") std::sort(values.begin(), values.end());
    return list_value(std::move(values));
  }

  PyValue length(const Py& n) {
    arity(n, 1, 1);
    return number_value(static_cast<std::int64_t>(list(*n.kids[0]).size()));
  }

  // min() and max(), of one list or of two or more numbers.
  PyValue extreme(const Py& n) {
    if (n.kids.empty()) arity(n, 1, 1);
    std::vector<std::int64_t> values;
    if (n.kids.size() == 1) {
      values = list(*n.kids[0]);
    } else {
      for (const auto& kid : n.kids) values.push_back(number(*kid));
    }
    if (values.empty()) refuse(n.text + "() of an empty list");
    charge(values.size());
    return number_value(n.text == "min" ? *std::min_element(values.begin(), values.end())
                                        : *std::max_element(values.begin(), values.end()));
  }

  // abs() and int(), which of an integer is the integer.
  PyValue absolute(const Py& n) {
    arity(n, 1, 1);
    const std::int64_t v = number(*n.kids[0]);
    if (n.text == "int") return number_value(v);
    if (v == kInt64Min) refuse("integer overflow: abs(" + std::to_string(v) + ") does not fit in 64 bits");
    return number_value(v < 0 ? -v : v);
  }

  PyValue sum(const Py& n) {
    arity(n, 1, 1);
    std::int64_t total = 0;
    const std::vector<std::int64_t> values = list(*n.kids[0]);
    charge(values.size());
    for (const std::int64_t v : values)
      if (__builtin_add_overflow(total, v, &total)) overflow(total, "+", v);
    return number_value(total);
  }

  PyValue comprehension(const Py& n) {
    const std::vector<std::int64_t> source = list(*n.kids[1]);
    charge(source.size());
    std::vector<std::int64_t> out;
    for (const std::int64_t v : source) {
      locals_.emplace_back(n.text, v);
      bool keep = true;
      for (std::size_t c = 2; c < n.kids.size() && keep; ++c) keep = truthy(eval(*n.kids[c]));
      if (keep) out.push_back(number(*n.kids[0]));
      locals_.pop_back();
    }
    return list_value(std::move(out));
  }

  std::map<std::string, PyValue> names_;
  std::vector<std::pair<std::string, std::int64_t>> locals_;  // comprehension variables, innermost last
  std::uint64_t steps_ = 0;
};

// ---- Python to tiletune: translation of expressions over parameters ----

// What is known of an expression's value over every configuration (from the parameters' values).
struct Range {
  bool known = false;
  std::int64_t lo = 0, hi = 0;
};

Range range_of(__int128 a, __int128 b, __int128 c, __int128 d) {
  const __int128 lo = std::min({a, b, c, d}), hi = std::max({a, b, c, d});
  if (lo < kInt64Min || hi > kInt64Max) return {};
  return {true, static_cast<std::int64_t>(lo), static_cast<std::int64_t>(hi)};
}

// Precedence levels, shared by tiletune's grammar and C: a lower level binds less tightly.
enum Level { kTernary, kOr, kAnd, kEquality, kRelational, kAdditive, kMultiplicative, kUnary, kAtom };

// One translated expression: tiletune's text and the C text (for the kernel's macros, where problem sizes are
// numbers), with its value when it is constant, its range, and whether it is a truth value.
struct Tx {
  std::optional<std::int64_t> constant;
  std::string tt, c;
  int level = kAtom;
  Range range;
  bool boolean = false;
};

std::string number_text(std::int64_t v) {
  return v == kInt64Min ? "(-9223372036854775807 - 1)" : std::to_string(v);
}

Tx constant_tx(std::int64_t v, bool boolean = false) {
  Tx t;
  t.constant = v;
  t.tt = t.c = number_text(v);
  t.level = v < 0 && v != kInt64Min ? kUnary : kAtom;
  t.range = {true, v, v};
  t.boolean = boolean;
  return t;
}

Tx variable_tx(const std::string& tt, const std::string& c, Range range) {
  Tx t;
  t.tt = tt;
  t.c = c;
  t.range = range;
  return t;
}

std::string wrap(const std::string& text, int level, int need) {
  return level < need ? "(" + text + ")" : text;
}

void check_length(const Tx& t) {
  if (t.tt.size() > kMaxTranslatedText || t.c.size() > kMaxTranslatedText)
    refuse("its translation would be longer than " + std::to_string(kMaxTranslatedText) + " characters");
}

Tx binary_tx(const Tx& a, const std::string& op, const Tx& b, int level) {
  // Comparisons of comparisons are legal in C but misleading; they get parentheses.
  const bool comparison = level == kEquality || level == kRelational;
  const int left_need = comparison ? kAdditive : level, right_need = comparison ? kAdditive : level + 1;
  Tx t;
  t.level = level;
  t.tt = wrap(a.tt, a.level, left_need) + " " + op + " " + wrap(b.tt, b.level, right_need);
  t.c = wrap(a.c, a.level, left_need) + " " + op + " " + wrap(b.c, b.level, right_need);
  check_length(t);
  return t;
}

Tx truth_tx(Tx t) {
  t.boolean = true;
  t.range = {true, 0, 1};
  return t;
}

Tx unary_tx(const std::string& op, const Tx& a) {
  Tx t;
  t.level = kUnary;
  // "-(-x)", never "--x", which C reads as a decrement.
  t.tt = op + wrap(a.tt, a.level, kAtom - (a.level == kUnary ? 0 : 1));
  t.c = op + wrap(a.c, a.level, kAtom - (a.level == kUnary ? 0 : 1));
  check_length(t);
  return t;
}

Tx ternary_tx(const Tx& cond, const Tx& yes, const Tx& no) {
  Tx t;
  t.level = kTernary;
  t.tt = wrap(cond.tt, cond.level, kOr) + " ? " + wrap(yes.tt, yes.level, kOr) + " : " +
         wrap(no.tt, no.level, kOr);
  t.c =
      wrap(cond.c, cond.level, kOr) + " ? " + wrap(yes.c, yes.level, kOr) + " : " + wrap(no.c, no.level, kOr);
  if (yes.range.known && no.range.known)
    t.range = {true, std::min(yes.range.lo, no.range.lo), std::max(yes.range.hi, no.range.hi)};
  t.boolean = yes.boolean && no.boolean;
  check_length(t);
  return t;
}

// tiletune's functions; C has none of them, so the C text spells them out.
Tx call_tx(const std::string& f, const Tx& a, const Tx* b = nullptr) {
  Tx t;
  const std::string A = "(" + a.c + ")", B = b ? "(" + b->c + ")" : "";
  t.tt = f + "(" + a.tt + (b ? ", " + b->tt : "") + ")";
  if (f == "min") t.c = "(" + A + " < " + B + " ? " + A + " : " + B + ")";
  if (f == "max") t.c = "(" + A + " > " + B + " ? " + A + " : " + B + ")";
  if (f == "abs") t.c = "(" + A + " < 0 ? -" + A + " : " + A + ")";
  if (f == "ceil_div") t.c = "((" + A + " + " + B + " - 1) / " + B + ")";
  if (b && a.range.known && b->range.known && (f == "min" || f == "max"))
    t.range = f == "min" ? Range{true, std::min(a.range.lo, b->range.lo), std::min(a.range.hi, b->range.hi)}
                         : Range{true, std::max(a.range.lo, b->range.lo), std::max(a.range.hi, b->range.hi)};
  check_length(t);
  return t;
}

bool non_negative(const Tx& t) { return t.range.known && t.range.lo >= 0; }
bool positive(const Tx& t) { return t.range.known && t.range.lo > 0; }

// Python's a % b. C's % truncates, so it agrees only where a >= 0 and b > 0; elsewhere the remainder is moved
// to b's sign.
Tx py_mod_tx(const Tx& a, const Tx& b) {
  if (a.constant && b.constant) return constant_tx(py_mod(*a.constant, *b.constant));
  const Tx m = binary_tx(a, "%", b, kMultiplicative);
  if (non_negative(a) && positive(b)) {
    Tx t = m;
    t.range = {true, 0, std::min(a.range.hi, b.range.hi - 1)};
    return t;
  }
  if (positive(b)) {
    Tx t = binary_tx(binary_tx(m, "+", b, kAdditive), "%", b, kMultiplicative);
    t.range = {true, 0, b.range.hi - 1};
    return t;
  }
  const Tx zero = constant_tx(0);
  const Tx moved = binary_tx(
      binary_tx(m, "!=", zero, kEquality), "&&",
      binary_tx(binary_tx(m, "<", zero, kRelational), "!=", binary_tx(b, "<", zero, kRelational), kEquality),
      kAnd);
  return ternary_tx(moved, binary_tx(m, "+", b, kAdditive), m);
}

// Python's a // b: C's / where both are known non-negative and positive, else (a - a mod b) / b, which is
// exact.
Tx py_floor_div_tx(const Tx& a, const Tx& b) {
  if (a.constant && b.constant) return constant_tx(py_floor_div(*a.constant, *b.constant));
  if (non_negative(a) && positive(b)) {
    Tx t = binary_tx(a, "/", b, kMultiplicative);
    t.range = {true, a.range.lo / b.range.hi, a.range.hi / b.range.lo};
    return t;
  }
  return binary_tx(binary_tx(a, "-", py_mod_tx(a, b), kAdditive), "/", b, kMultiplicative);
}

Tx arithmetic_tx(const std::string& op, const Tx& a, const Tx& b) {
  if (a.constant && b.constant) return constant_tx(py_binary(op, *a.constant, *b.constant));
  if (op == "//") return py_floor_div_tx(a, b);
  if (op == "%") return py_mod_tx(a, b);
  if (op == "/") py_binary(op, 0, 1);  // refuses, saying why
  if (op != "+" && op != "-" && op != "*")
    refuse("bitwise '" + op + "' of parameters has no counterpart in tiletune's expressions");
  Tx t = binary_tx(a, op, b, op == "*" ? kMultiplicative : kAdditive);
  if (a.range.known && b.range.known) {
    const __int128 al = a.range.lo, ah = a.range.hi, bl = b.range.lo, bh = b.range.hi;
    t.range = op == "+"   ? range_of(al + bl, ah + bh, al + bl, ah + bh)
              : op == "-" ? range_of(al - bh, ah - bl, al - bh, ah - bl)
                          : range_of(al * bl, al * bh, ah * bl, ah * bh);
  }
  return t;
}

Tx comparison_tx(const std::string& op, const Tx& a, const Tx& b) {
  if (a.constant && b.constant) return constant_tx(py_compare(op, *a.constant, *b.constant), true);
  if (op == "is" || op == "is not") py_compare(op, 0, 0);  // refuses, saying why
  return truth_tx(binary_tx(a, op, b, op == "==" || op == "!=" ? kEquality : kRelational));
}

Tx logical_tx(const std::string& op, const Tx& a, const Tx& b) {
  return truth_tx(binary_tx(a, op, b, op == "&&" ? kAnd : kOr));
}

// Translates Python expressions over the parameters (each read as a variable ranging over its values) and
// the problem size (ProblemSize[i], a problem variable) into tiletune's expressions.
class Translator {
 public:
  struct Dim {
    std::string name;
    std::int64_t size;
  };
  Translator(std::map<std::string, std::vector<std::int64_t>> params, std::vector<Dim> dims)
      : params_(std::move(params)), dims_(std::move(dims)) {}

  // truth: only the value's truth matters (a condition), not the number.
  Tx translate(const Py& n, bool truth) {
    std::vector<std::string> bound;
    if (constant(n, bound)) return evaluated(n);
    switch (n.kind) {
      case Py::Kind::name:
        return name(n.text);
      case Py::Kind::subscript:
        return problem_size(n);
      case Py::Kind::unary:
        return unary(n);
      case Py::Kind::chain:
        return chain(n);
      case Py::Kind::power:
        return power(n);
      case Py::Kind::compare:
        return compare(n);
      case Py::Kind::boolop:
        return boolean(n, truth);
      case Py::Kind::ifexp:
        return conditional(n, truth);
      case Py::Kind::call:
        return call(n);
      case Py::Kind::list:
      case Py::Kind::comprehension:
        refuse("a list where a number is needed");
      case Py::Kind::number:
        break;
    }
    return constant_tx(n.value, n.is_bool);
  }

 private:
  // An expression that reads no parameter and no problem size, evaluated as Python would.
  static Tx evaluated(const Py& n) {
    PyEvaluator evaluator;
    const PyValue v = evaluator.eval(n);
    if (v.is_list) refuse("a list where a number is needed");
    return constant_tx(v.number, v.is_bool);
  }

  Tx unary(const Py& n) {
    if (n.text == "not") return truth_tx(unary_tx("!", translate(*n.kids[0], true)));
    const Tx a = translate(*n.kids[0], false);
    if (n.text == "+") return a;
    if (n.text == "~") refuse("bitwise '~' of parameters has no counterpart in tiletune's expressions");
    Tx t = unary_tx("-", a);
    if (a.range.known && a.range.lo != kInt64Min) t.range = {true, -a.range.hi, -a.range.lo};
    return t;
  }

  Tx chain(const Py& n) {
    Tx acc = translate(*n.kids[0], false);
    for (std::size_t i = 0; i < n.ops.size(); ++i)
      acc = arithmetic_tx(n.ops[i], acc, translate(*n.kids[i + 1], false));
    return acc;
  }

  // BODY if COND else ORELSE: one side only when the condition is constant.
  Tx conditional(const Py& n, bool truth) {
    const Tx cond = translate(*n.kids[1], true);
    if (cond.constant) return translate(*n.kids[*cond.constant ? 0 : 2], truth);
    return ternary_tx(cond, translate(*n.kids[0], truth), translate(*n.kids[2], truth));
  }

  // Whether n reads no parameter and no problem size (then it is evaluated here, as Python would).
  bool constant(const Py& n, std::vector<std::string>& bound) const {
    if (n.kind == Py::Kind::name)
      return std::find(bound.begin(), bound.end(), n.text) != bound.end() ||
             (!params_.count(n.text) && n.text != "ProblemSize");
    if (n.kind == Py::Kind::comprehension) {
      if (!constant(*n.kids[1], bound)) return false;
      bound.push_back(n.text);
      bool all = true;
      for (std::size_t i = 0; i < n.kids.size() && all; ++i)
        if (i != 1) all = constant(*n.kids[i], bound);
      bound.pop_back();
      return all;
    }
    return std::all_of(n.kids.begin(), n.kids.end(), [&](const PyPtr& kid) { return constant(*kid, bound); });
  }

  Tx name(const std::string& name) const {
    if (name == "ProblemSize") refuse("ProblemSize is a list: index it, e.g. ProblemSize[0]");
    const auto& values = params_.at(name);
    return variable_tx(name, name,
                       {true, *std::min_element(values.begin(), values.end()),
                        *std::max_element(values.begin(), values.end())});
  }

  Tx problem_size(const Py& n) {
    if (n.kids[0]->kind != Py::Kind::name || n.kids[0]->text != "ProblemSize")
      refuse("only ProblemSize[i] may be indexed");
    std::vector<std::string> bound;
    if (!constant(*n.kids[1], bound)) refuse("ProblemSize's index must be a constant");
    PyEvaluator evaluator;
    std::int64_t i = evaluator.number(*n.kids[1]);
    const auto count = static_cast<std::int64_t>(dims_.size());
    if (i < -count || i >= count)
      refuse("ProblemSize[" + std::to_string(i) + "]: ProblemSize has " + std::to_string(count) + " entries");
    const Dim& d = dims_[static_cast<std::size_t>(i < 0 ? i + count : i)];
    return variable_tx(d.name, std::to_string(d.size), {true, d.size, d.size});
  }

  Tx power(const Py& n) {
    const Tx base = translate(*n.kids[0], false);
    std::vector<std::string> bound;
    if (!constant(*n.kids[1], bound))
      refuse("'**' with an exponent that depends on parameters has no counterpart in tiletune's expressions");
    PyEvaluator evaluator;
    const std::int64_t exponent = evaluator.number(*n.kids[1]);
    if (exponent < 0) py_power(0, exponent);  // refuses, saying why
    if (exponent == 0) return constant_tx(1);
    if (exponent > 62)
      refuse("'**' with an exponent above 62 overflows 64 bits for any base but 0, 1 and -1");
    Tx acc = base;
    for (std::int64_t k = 1; k < exponent; ++k) acc = arithmetic_tx("*", acc, base);
    return acc;
  }

  Tx compare(const Py& n) {
    std::optional<Tx> result;
    Tx left = translate(*n.kids[0], false);
    for (std::size_t i = 0; i < n.ops.size(); ++i) {
      const std::string& op = n.ops[i];
      Tx part;
      if (op == "in" || op == "not in") {
        if (i + 1 < n.ops.size()) refuse("a comparison that goes on after '" + op + "' is not supported");
        part = membership(left, op == "in", *n.kids[i + 1]);
      } else {
        Tx right = translate(*n.kids[i + 1], false);
        part = comparison_tx(op, left, right);
        left = std::move(right);
      }
      // a < b < c is a < b and b < c.
      if (!result)
        result = part;
      else if (result->constant && part.constant)
        result = constant_tx(*result->constant && *part.constant, true);
      else
        result = logical_tx("&&", *result, part);
    }
    return *result;
  }

  Tx membership(const Tx& x, bool in, const Py& list) {
    std::vector<std::string> bound;
    if (!constant(list, bound)) refuse("the right side of 'in' must be a list of constants");
    PyEvaluator evaluator;
    const std::vector<std::int64_t> values = evaluator.list(list);
    if (x.constant)
      return constant_tx((std::find(values.begin(), values.end(), *x.constant) != values.end()) == in, true);
    if (values.size() > kMaxMembers)
      refuse("'in' a list of more than " + std::to_string(kMaxMembers) + " values is not supported");
    if (values.empty()) return constant_tx(!in, true);
    std::optional<Tx> out;
    for (const std::int64_t v : values) {
      const Tx test = comparison_tx(in ? "==" : "!=", x, constant_tx(v));
      out = out ? logical_tx(in ? "||" : "&&", *out, test) : test;
    }
    return *out;
  }

  Tx boolean(const Py& n, bool truth) {
    std::optional<Tx> out;
    for (const auto& kid : n.kids) {
      Tx t = translate(*kid, truth);
      // Python's "and" and "or" give one of their operands: where the number matters, each must be a truth
      // value.
      if (!truth && !t.boolean && !(t.constant && (*t.constant == 0 || *t.constant == 1)))
        refuse("'" + n.text +
               "' gives one of its operands in Python, not a truth value; it cannot be used as a number");
      out = out ? logical_tx(n.text == "and" ? "&&" : "||", *out, t) : t;
    }
    return truth_tx(*out);
  }

  Tx call(const Py& n) {
    const std::string& f = n.text;
    if (f == "min" || f == "max") {
      if (n.kids.size() < 2)
        refuse(
            f +
            "() of one argument needs a list, and a parameter is a number here; give two or more arguments");
      Tx acc = translate(*n.kids[0], false);
      for (std::size_t i = 1; i < n.kids.size(); ++i) {
        const Tx next = translate(*n.kids[i], false);
        acc = call_tx(f, acc, &next);
      }
      return acc;
    }
    if (f == "abs" && n.kids.size() == 1) {
      const Tx a = translate(*n.kids[0], false);
      Tx t = call_tx("abs", a);
      if (a.range.known && a.range.lo != kInt64Min)
        t.range = a.range.lo >= 0   ? a.range
                  : a.range.hi <= 0 ? Range{true, -a.range.hi, -a.range.lo}
                                    : Range{true, 0, std::max(-a.range.lo, a.range.hi)};
      return t;
    }
    if (f == "int" && n.kids.size() == 1) return translate(*n.kids[0], false);
    refuse("'" + shown(f) + "(...)' of parameters has no counterpart in tiletune's expressions");
  }

  std::map<std::string, std::vector<std::int64_t>> params_;
  std::vector<Dim> dims_;
};

// ---- T1 documents ----

struct Param {
  std::string name;
  std::vector<std::int64_t> values;
  std::int64_t default_value = 0;
};

struct Buffer {
  std::string name, type;  // the argument's name in family.json (renamed when also a constant)
  std::int64_t count = 0;
  std::string role;
  std::optional<ordered_json> fill;
  std::string constant_name;  // MemType Constant: the __constant__ symbol it also fills
};

// Reads a T1 document's fields with messages that name the file and the field.
class Doc {
 public:
  explicit Doc(std::string file) : file_(std::move(file)) {}

  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw T1Error(file_ + ": " + field + ": " + what);
  }
  const std::string& file() const { return file_; }

  const json* find(const json& obj, const char* key) const {
    if (!obj.is_object()) return nullptr;
    const auto it = obj.find(key);
    return it == obj.end() || it->is_null() ? nullptr : &*it;
  }
  const json& need(const json& obj, const char* key, const std::string& field) const {
    const json* v = find(obj, key);
    if (!v) fail(field, "missing");
    return *v;
  }
  const json& object(const json& obj, const char* key, const std::string& field) const {
    const json& v = need(obj, key, field);
    if (!v.is_object()) fail(field, "must be an object");
    return v;
  }
  std::string text(const json& v, const std::string& field) const {
    if (!v.is_string()) fail(field, "must be a string");
    return v.get<std::string>();
  }
  // An expression field: Python text, or an integer written as a JSON number.
  std::string expression(const json& v, const std::string& field) const {
    if (v.is_number_integer()) return std::to_string(v.get<std::int64_t>());
    if (!v.is_string()) fail(field, "must be an expression string or an integer");
    return v.get<std::string>();
  }

  // Runs one Python translation, naming the field and the expression when it fails.
  template <class F>
  auto python(const std::string& field, const std::string& text, F&& f) const {
    try {
      return f(text);
    } catch (const PyError& e) {
      fail(field, "cannot translate '" + shown(text) + "': " + e.what());
    } catch (const ExprError& e) {
      fail(field, "cannot translate '" + shown(text) + "': " + e.what());
    }
  }

 private:
  std::string file_;
};

// A parameter's Name: an identifier that can be a macro, reserved for nothing, not taken by an earlier one.
std::string parameter_name(const Doc& d, const json& p, const std::string& field,
                           const std::vector<Param>& before) {
  const std::string name = d.text(d.need(p, "Name", field + ".Name"), field + ".Name");
  if (!is_identifier(name))
    d.fail(field + ".Name",
           "'" + shown(name) + "' is not an identifier (tiletune defines each parameter as a macro)");
  if (const std::string why = macro_name_problem(name); !why.empty()) d.fail(field + ".Name", why);
  if (name == kDeviceCcVar || name == kDeviceSmsVar)
    d.fail(field + ".Name", "'" + name + "' is reserved in tiletune for the device's " +
                                (name == kDeviceCcVar ? "compute capability" : "SM count"));
  if (name == "ProblemSize")
    d.fail(field + ".Name", "'ProblemSize' names the problem size in T1 expressions");
  for (const auto& other : before)
    if (other.name == name) d.fail(field + ".Name", "'" + name + "' appears twice");
  return name;
}

// A parameter's Values as written: a list of integers, or Python that gives one.
std::vector<std::int64_t> parameter_values(const Doc& d, const json& p, const std::string& field) {
  const json& values = d.need(p, "Values", field + ".Values");
  if (!values.is_array()) {
    const std::string text = d.text(values, field + ".Values");
    return d.python(field + ".Values", text,
                    [](const std::string& t) { return PyEvaluator().list(*parse_python(t)); });
  }
  std::vector<std::int64_t> raw;
  for (const json& v : values) {
    if (!v.is_number_integer()) d.fail(field + ".Values", "must hold integers");
    raw.push_back(v.get<std::int64_t>());
  }
  return raw;
}

Param read_parameter(const Doc& d, const json& p, const std::string& field,
                     const std::vector<Param>& before) {
  if (!p.is_object()) d.fail(field, "must be an object");
  Param param;
  param.name = parameter_name(d, p, field, before);
  const std::string type = d.text(d.need(p, "Type", field + ".Type"), field + ".Type");
  if (type != "int" && type != "uint")
    d.fail(field + ".Type",
           "'" + shown(type) +
               "' parameters cannot be translated: tiletune's parameters are integers (int, uint)");
  // Kernel Tuner would run a repeated value twice; once is the same space.
  std::set<std::int64_t> seen;
  for (const std::int64_t v : parameter_values(d, p, field))
    if (seen.insert(v).second) param.values.push_back(v);
  if (param.values.empty()) d.fail(field + ".Values", "has no values");
  if (type == "uint" && *std::min_element(param.values.begin(), param.values.end()) < 0)
    d.fail(field + ".Values", "a uint parameter has a negative value");
  param.default_value = param.values.front();
  if (const json* def = d.find(p, "Default")) {
    if (!def->is_number_integer()) d.fail(field + ".Default", "must be an integer");
    param.default_value = def->get<std::int64_t>();
    if (!seen.count(param.default_value))
      d.fail(field + ".Default", std::to_string(param.default_value) + " is not one of its Values");
  }
  return param;
}

std::vector<Param> read_parameters(const Doc& d, const json& space) {
  const json& list = d.need(space, "TuningParameters", "ConfigurationSpace.TuningParameters");
  if (!list.is_array() || list.empty())
    d.fail("ConfigurationSpace.TuningParameters", "must be a non-empty list");
  std::vector<Param> out;
  for (std::size_t i = 0; i < list.size(); ++i)
    out.push_back(
        read_parameter(d, list[i], "ConfigurationSpace.TuningParameters[" + std::to_string(i) + "]", out));
  return out;
}

std::vector<Translator::Dim> read_problem_size(const Doc& d, const json& spec,
                                               const std::vector<Param>& params) {
  const std::string field = "KernelSpecification.ProblemSize";
  const json& size = d.need(spec, "ProblemSize", field);
  std::vector<json> entries;
  if (size.is_array()) {
    entries.assign(size.begin(), size.end());
    if (entries.empty() || entries.size() > 3) d.fail(field, "must have 1 to 3 entries");
  } else {
    entries.push_back(size);
  }
  std::vector<Translator::Dim> dims;
  static const char* axes[] = {"x", "y", "z"};
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const std::string where = size.is_array() ? field + "[" + std::to_string(i) + "]" : field;
    const std::string text = d.expression(entries[i], where);
    const std::int64_t value = d.python(where, text, [&](const std::string& t) {
      const PyPtr tree = parse_python(t);
      for (const auto& p : params)
        if (reads_name(*tree, p.name))
          refuse("a problem size that depends on parameters has no counterpart in tiletune");
      return PyEvaluator().number(*tree);
    });
    if (value <= 0) d.fail(where, "must be positive, got " + std::to_string(value));
    // Problem variables share the parameters' namespace: the name steps aside from theirs.
    std::string name = std::string("problem_") + axes[i];
    while (std::any_of(params.begin(), params.end(), [&](const Param& p) { return p.name == name; }))
      name += "_";
    dims.push_back({name, value});
  }
  return dims;
}

struct LaunchTx {
  std::array<Tx, 3> block, grid;
  std::array<std::string, 3> grid_field;  // where each grid dimension came from, for messages
  std::optional<Tx> shared;
};

Tx launch_expression(const Doc& d, Translator& tr, const json& v, const std::string& field) {
  const std::string text = d.expression(v, field);
  return d.python(field, text, [&](const std::string& t) { return tr.translate(*parse_python(t), false); });
}

constexpr const char* kLaunchAxes[] = {"X", "Y", "Z"};

std::array<Tx, 3> read_block(const Doc& d, const json& spec, Translator& tr) {
  std::array<Tx, 3> block;
  const json& local = d.object(spec, "LocalSize", "KernelSpecification.LocalSize");
  for (std::size_t i = 0; i < 3; ++i) {
    const std::string field = std::string("KernelSpecification.LocalSize.") + kLaunchAxes[i];
    const json* v = d.find(local, kLaunchAxes[i]);
    if (!v && i == 0) d.fail(field, "missing");
    block[i] = v ? launch_expression(d, tr, *v, field) : constant_tx(1);
  }
  return block;
}

// Grid dimension i from GridDiv{X,Y,Z}: false when there is none (or it is empty).
bool read_grid_div(const Doc& d, const json& spec, Translator& tr, const std::vector<Translator::Dim>& dims,
                   std::size_t i, LaunchTx& out) {
  const std::string key = std::string("GridDiv") + kLaunchAxes[i], div_field = "KernelSpecification." + key;
  const json* div = d.find(spec, key.c_str());
  if (div && !div->is_array()) d.fail(div_field, "must be a list of parameter names or expressions");
  if (!div || div->empty()) return false;
  // Kernel Tuner's grid: the problem size divided by the product of the divisors, rounded up.
  std::optional<Tx> product;
  for (std::size_t k = 0; k < div->size(); ++k) {
    const std::string field = div_field + "[" + std::to_string(k) + "]",
                      text = d.expression((*div)[k], field);
    product = d.python(field, text, [&](const std::string& t) {
      const Tx factor = tr.translate(*parse_python(t), false);
      return product ? arithmetic_tx("*", *product, factor) : factor;
    });
  }
  // Kernel Tuner pads the problem size with 1s to three dimensions.
  const Tx dim = i < dims.size() ? variable_tx(dims[i].name, std::to_string(dims[i].size),
                                               {true, dims[i].size, dims[i].size})
                                 : constant_tx(1);
  out.grid[i] = call_tx("ceil_div", dim, &*product);
  out.grid_field[i] = div_field;
  return true;
}

// Grid dimension i from GlobalSize, which counts blocks (CUDA) or threads (OpenCL).
void read_global_size(const Doc& d, const json* global, Translator& tr, const std::string& size_type,
                      std::size_t i, LaunchTx& out) {
  const std::string field = std::string("KernelSpecification.GlobalSize.") + kLaunchAxes[i];
  const json* v = global ? d.find(*global, kLaunchAxes[i]) : nullptr;
  if (!v && i == 0) d.fail(field, "missing (and no GridDivX)");
  const Tx g = v ? launch_expression(d, tr, *v, field) : constant_tx(1);
  out.grid[i] = size_type == "CUDA" ? g : call_tx("ceil_div", g, &out.block[i]);
  out.grid_field[i] = field;
}

LaunchTx read_launch(const Doc& d, const json& spec, Translator& tr,
                     const std::vector<Translator::Dim>& dims) {
  LaunchTx out;
  out.block = read_block(d, spec, tr);
  std::string size_type = "OpenCL";
  if (const json* t = d.find(spec, "GlobalSizeType"))
    size_type = d.text(*t, "KernelSpecification.GlobalSizeType");
  if (size_type != "OpenCL" && size_type != "CUDA")
    d.fail(
        "KernelSpecification.GlobalSizeType",
        "'" + shown(size_type) + "' cannot be translated (CUDA: GlobalSize counts blocks; OpenCL: threads)");
  const json* global = d.find(spec, "GlobalSize");
  if (global && !global->is_object()) d.fail("KernelSpecification.GlobalSize", "must be an object");
  for (std::size_t i = 0; i < 3; ++i)
    if (!read_grid_div(d, spec, tr, dims, i, out)) read_global_size(d, global, tr, size_type, i, out);
  if (const json* shared = d.find(spec, "SharedMemory")) {
    out.shared = launch_expression(d, tr, *shared, "KernelSpecification.SharedMemory");
    if (out.shared->constant && *out.shared->constant < 0)
      d.fail("KernelSpecification.SharedMemory", "must not be negative");
  }
  return out;
}

std::optional<std::string> element_type_for(const std::string& t1_type) {
  static const std::set<std::string> same = {"float", "double", "half",   "int8",
                                             "uint8", "int32",  "uint32", "int64"};
  if (same.count(t1_type)) return t1_type;
  return std::nullopt;
}

// Checks a constant fill against its type and returns it as family.json writes it.
ordered_json constant_fill(const Doc& d, const json& arg, const std::string& type, const std::string& field) {
  const json& value = d.need(arg, "FillValue", field + ".FillValue");
  if (!value.is_number()) d.fail(field + ".FillValue", "must be a number");
  const auto element = element_type_from_string(type);
  if (element && !is_floating(*element)) {
    const double v = value.get<double>();
    static const std::map<std::string, std::pair<double, double>> limits = {
        {"int8", {-128, 127}},
        {"uint8", {0, 255}},
        {"int32", {-2147483648.0, 2147483647.0}},
        {"uint32", {0, 4294967295.0}},
        {"int64", {-9.2e18, 9.2e18}}};
    const auto& [lo, hi] = limits.at(type);
    if (v < lo || v > hi || v != std::floor(v))
      d.fail(field + ".FillValue", value.dump() + " is not a " + type + " value");
    return ordered_json{{"constant", static_cast<std::int64_t>(v)}};
  }
  return ordered_json{{"constant", value.get<double>()}};
}

struct Arguments {
  ordered_json arguments = ordered_json::array();
  ordered_json constants = ordered_json::array();
  std::vector<Buffer> buffers;
};

// The names sizes are evaluated with, as Kernel Tuner evaluates them: each parameter's name is its list of
// values (so that max(filter_width) is its largest value) and ProblemSize is the list of sizes.
std::map<std::string, PyValue> size_names(const std::vector<Param>& params,
                                          const std::vector<Translator::Dim>& dims) {
  std::map<std::string, PyValue> names;
  for (const auto& p : params) names[p.name] = list_value(p.values);
  std::vector<std::int64_t> sizes;
  for (const auto& dim : dims) sizes.push_back(dim.size);
  names["ProblemSize"] = list_value(sizes);
  return names;
}

// Argument i's Name ("argI" when it has none): an identifier not taken by an earlier one.
std::string argument_name(const Doc& d, const json& a, const std::string& field, std::size_t i,
                          std::set<std::string>& used) {
  std::string name = "arg" + std::to_string(i);
  if (const json* n = d.find(a, "Name")) name = d.text(*n, field + ".Name");
  if (!is_identifier(name)) d.fail(field + ".Name", "'" + shown(name) + "' is not an identifier");
  if (!used.insert(name).second) d.fail(field + ".Name", "'" + name + "' appears twice");
  return name;
}

ordered_json scalar_value(const Doc& d, const json& value, const std::string& type,
                          const std::string& field) {
  if (type == "float" || type == "double") return value.get<double>();
  const double v = value.get<double>();
  const double limit = type == "int32" ? 2147483647.0 : 9.2e18;
  if (v > limit || v < -limit - 1 || v != std::floor(v))
    d.fail(field + ".FillValue", value.dump() + " is not a " + type + " value");
  return static_cast<std::int64_t>(v);
}

ordered_json read_scalar(const Doc& d, const json& a, const std::string& field, const std::string& name,
                         const std::string& type) {
  static const std::map<std::string, std::string> scalars = {
      {"int32", "int"}, {"int64", "long"}, {"float", "float"}, {"double", "double"}};
  const auto it = scalars.find(type);
  if (it == scalars.end())
    d.fail(field + ".Type",
           "a '" + shown(type) + "' scalar has no tiletune counterpart (int32, int64, float, double)");
  const json& value = d.need(a, "FillValue", field + ".FillValue");
  if (!value.is_number()) d.fail(field + ".FillValue", "must be a number");
  ordered_json arg = {{"name", name}, {"scalar", it->second}};
  arg["value"] = scalar_value(d, value, type, field);
  if (d.find(a, "MemType") &&
      d.text(d.need(a, "MemType", field + ".MemType"), field + ".MemType") != "Global")
    d.fail(field + ".MemType", "a scalar cannot live in constant memory here");
  return arg;
}

// A vector's role from its AccessType; Kernel Tuner checks nothing: without a word, the vector is checked.
std::string vector_role(const Doc& d, const json& a, const std::string& field) {
  std::string access = "ReadWrite";
  if (const json* v = d.find(a, "AccessType")) access = d.text(*v, field + ".AccessType");
  if (access == "ReadOnly") return "input";
  if (access == "WriteOnly") return "output";
  if (access == "ReadWrite") return "inout";
  d.fail(field + ".AccessType",
         "'" + shown(access) + "' cannot be translated (ReadOnly, WriteOnly, ReadWrite)");
}

void read_vector_fill(const Doc& d, const json& a, const std::string& field, Buffer& b) {
  std::string fill_type;
  if (const json* v = d.find(a, "FillType")) fill_type = d.text(*v, field + ".FillType");
  if (!fill_type.empty() && fill_type != "Constant" && fill_type != "Random")
    d.fail(field + ".FillType",
           "'" + shown(fill_type) + "' fills need data tiletune does not have (Constant, Random)");
  if (b.role == "output") return;  // an output is poisoned before every run, never filled
  if (fill_type.empty())
    d.fail(field + ".FillType", "missing (Constant or Random) for a vector the kernel reads");
  if (fill_type == "Constant") b.fill = constant_fill(d, a, b.type, field);
}

void read_vector_memory(const Doc& d, const json& a, const std::string& field, Buffer& b) {
  const json* mem = d.find(a, "MemType");
  if (!mem) return;
  const std::string kind = d.text(*mem, field + ".MemType");
  if (kind == "Constant") {
    if (b.role != "input") d.fail(field + ".MemType", "only a ReadOnly vector can live in constant memory");
    b.constant_name = b.name;
  } else if (kind != "Global") {
    d.fail(field + ".MemType", "'" + shown(kind) + "' cannot be translated (Global, Constant)");
  }
}

Buffer read_vector(const Doc& d, const json& a, const std::string& field, const std::string& name,
                   const std::string& type, const std::map<std::string, PyValue>& names) {
  Buffer b;
  b.name = name;
  const auto element = element_type_for(type);
  if (!element)
    d.fail(field + ".Type",
           "'" + shown(type) +
               "' vectors have no tiletune element type (float, double, half, int8, uint8, int32, "
               "uint32, int64)");
  b.type = *element;
  const json& size = d.need(a, "Size", field + ".Size");
  const std::string size_text = d.expression(size, field + ".Size");
  b.count = d.python(field + ".Size", size_text,
                     [&](const std::string& t) { return PyEvaluator(names).number(*parse_python(t)); });
  if (b.count <= 0) d.fail(field + ".Size", "must be positive, got " + std::to_string(b.count));
  b.role = vector_role(d, a, field);
  read_vector_fill(d, a, field, b);
  read_vector_memory(d, a, field, b);
  return b;
}

// Kernel Tuner passes a constant-memory vector both as an argument and as the __constant__ symbol of that
// name; tiletune names arguments and constants apart, so the argument takes a new name.
void rename_constant_vectors(std::vector<Buffer>& buffers, std::set<std::string>& used) {
  for (auto& b : buffers) {
    if (b.constant_name.empty()) continue;
    std::string renamed = b.name + "_arg";
    while (used.count(renamed)) renamed += "_";
    used.insert(renamed);
    b.name = renamed;
  }
}

// The vectors go among the scalars at their places in the T1 list; constant-memory ones are constants too.
void place_vectors(const Doc& d, const json& list, Arguments& out) {
  std::size_t next_buffer = 0;
  for (std::size_t i = 0; i < list.size(); ++i) {
    if (d.text(list[i].at("MemoryType"), "") != "Vector") continue;
    const Buffer& b = out.buffers[next_buffer++];
    ordered_json arg = {{"name", b.name}, {"buffer", b.type}, {"count", b.count}, {"role", b.role}};
    if (b.fill) arg["fill"] = *b.fill;
    out.arguments.insert(out.arguments.begin() + static_cast<std::ptrdiff_t>(i), std::move(arg));
    if (!b.constant_name.empty()) {
      ordered_json c = {{"name", b.constant_name}, {"type", b.type}, {"count", b.count}};
      if (b.fill) c["fill"] = *b.fill;
      out.constants.push_back(std::move(c));
    }
  }
}

Arguments read_arguments(const Doc& d, const json& spec, const std::vector<Param>& params,
                         const std::vector<Translator::Dim>& dims) {
  const json& list = d.need(spec, "Arguments", "KernelSpecification.Arguments");
  if (!list.is_array() || list.empty()) d.fail("KernelSpecification.Arguments", "must be a non-empty list");
  const std::map<std::string, PyValue> names = size_names(params, dims);
  Arguments out;
  std::set<std::string> used;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string field = "KernelSpecification.Arguments[" + std::to_string(i) + "]";
    const json& a = list[i];
    if (!a.is_object()) d.fail(field, "must be an object");
    const std::string name = argument_name(d, a, field, i, used);
    const std::string type = d.text(d.need(a, "Type", field + ".Type"), field + ".Type");
    const std::string memory = d.text(d.need(a, "MemoryType", field + ".MemoryType"), field + ".MemoryType");
    if (memory == "Scalar") {
      out.arguments.push_back(read_scalar(d, a, field, name, type));
      continue;
    }
    if (memory != "Vector")
      d.fail(field + ".MemoryType",
             "'" + shown(memory) + "' arguments cannot be translated (Vector, Scalar)");
    out.buffers.push_back(read_vector(d, a, field, name, type, names));
  }
  rename_constant_vectors(out.buffers, used);
  place_vectors(d, list, out);
  if (std::none_of(out.buffers.begin(), out.buffers.end(), [](const Buffer& b) { return b.role != "input"; }))
    d.fail("KernelSpecification.Arguments",
           "no WriteOnly or ReadWrite vector: tiletune checks a kernel's outputs, and this one has none");
  return out;
}

std::string sanitized_name(const std::string& text) {
  std::string out;
  for (const char c : text) {
    const bool keep = std::isalnum(static_cast<unsigned char>(c)) && static_cast<unsigned char>(c) < 0x80;
    if (keep)
      out += c;
    else if (!out.empty() && out.back() != '_')
      out += '_';
  }
  while (!out.empty() && out.back() == '_') out.pop_back();
  if (!out.empty() && std::isdigit(static_cast<unsigned char>(out[0]))) out = "t1_" + out;
  return out.substr(0, 64);
}

std::string params_text(const std::vector<Param>& params) {
  std::string out;
  for (const auto& p : params)
    out += (out.empty() ? "" : ", ") + p.name + "=" + std::to_string(p.default_value);
  return out;
}

// Whether the source holds `word` as a whole identifier.
bool mentions(const std::string& source, const std::string& word) {
  auto is_word_char = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (std::size_t at = source.find(word); at != std::string::npos; at = source.find(word, at + 1))
    if ((at == 0 || !is_word_char(source[at - 1])) &&
        (at + word.size() == source.size() || !is_word_char(source[at + word.size()])))
      return true;
  return false;
}

// The names Kernel Tuner defines ahead of every kernel besides the parameters, as NVRTC -D options when the
// kernel reads them: kernel_tuner, and the block and grid sizes of the configuration.
std::vector<std::string> kernel_tuner_defines(const std::string& source, const std::vector<Param>& params,
                                              const LaunchTx& launch) {
  std::vector<std::pair<std::string, std::string>> defines = {{"kernel_tuner", "1"}};
  static const char* axes[] = {"x", "y", "z"};
  for (std::size_t i = 0; i < 3; ++i) {
    defines.emplace_back(std::string("block_size_") + axes[i], "(" + launch.block[i].c + ")");
    defines.emplace_back(std::string("grid_size_") + axes[i], "(" + launch.grid[i].c + ")");
  }
  std::vector<std::string> out;
  for (const auto& [name, value] : defines) {
    if (std::any_of(params.begin(), params.end(), [&, &n = name](const Param& p) { return p.name == n; }))
      continue;
    if (mentions(source, name)) out.push_back("-D" + name + "=" + value);
  }
  return out;
}

// A file's bytes; throws T1Error naming the file when it is no regular file, larger than `limit`, empty or
// unreadable. Read in blocks, so that a read that fails half-way is an error rather than a short text.
std::string read_limited(const std::filesystem::path& path, std::uintmax_t limit) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) throw T1Error(path.string() + " is not a regular file");
  if (std::filesystem::file_size(path, ec) > limit)
    throw T1Error(path.string() + " is larger than " + std::to_string(limit >> 20) + " MB");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw T1Error("cannot read " + path.string());
  std::string bytes;
  std::vector<char> block(1 << 16);
  while (in && bytes.size() <= limit) {
    in.read(block.data(), static_cast<std::streamsize>(block.size()));
    bytes.append(block.data(), static_cast<std::size_t>(in.gcount()));
  }
  if (in.bad()) throw T1Error("cannot read " + path.string() + ": the read failed");
  if (bytes.size() > limit)
    throw T1Error(path.string() + " is larger than " + std::to_string(limit >> 20) + " MB");
  if (bytes.empty()) throw T1Error(path.string() + " is empty");
  return bytes;
}

json parse_t1(const Doc& d, const std::string& text) {
  if (const std::string why = nul_byte_problem(text); !why.empty()) throw T1Error(d.file() + ": " + why);
  if (json_depth(text) > kMaxJsonDepth)
    throw T1Error(d.file() + ": nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::parse_error& e) {
    const std::string what = e.what();
    throw T1Error(d.file() + ": not valid JSON (" + what.substr(what.find(']') + 2) + ")");
  }
  if (!doc.is_object()) throw T1Error(d.file() + ": must hold a JSON object");
  return doc;
}

struct Conditions {
  ordered_json constraints = ordered_json::array();
  std::vector<std::pair<std::string, Expr>> checks;  // field, expression: checked at the defaults
};

// Conditions: Python over the parameters, translated; one that always holds constrains nothing.
Conditions read_conditions(const Doc& d, const json& space, Translator& tr) {
  Conditions out;
  const json* conditions = d.find(space, "Conditions");
  if (!conditions) return out;
  if (!conditions->is_array()) d.fail("ConfigurationSpace.Conditions", "must be a list");
  for (std::size_t i = 0; i < conditions->size(); ++i) {
    const std::string field = "ConfigurationSpace.Conditions[" + std::to_string(i) + "]";
    const json& c = (*conditions)[i];
    if (!c.is_object()) d.fail(field, "must be an object");
    const std::string python = d.text(d.need(c, "Expression", field + ".Expression"), field + ".Expression");
    const Tx t = d.python(field + ".Expression", python,
                          [&](const std::string& p) { return tr.translate(*parse_python(p), true); });
    if (t.constant && *t.constant) continue;
    if (t.constant)
      d.fail(field + ".Expression", "'" + shown(python) + "' never holds: the space would be empty");
    out.constraints.push_back({{"expr", t.tt}, {"message", "T1 condition " + shown(python, 200)}});
    out.checks.emplace_back(field + ".Expression", Expr::parse(t.tt));
  }
  return out;
}

// The kernel: its name as the source spells it (a C++ kernel is found by its lowered name).
std::string read_kernel_name(const Doc& d, const json& spec) {
  const std::string kernel =
      d.text(d.need(spec, "KernelName", "KernelSpecification.KernelName"), "KernelSpecification.KernelName");
  static const std::regex qualified("[A-Za-z_][A-Za-z0-9_]*(::[A-Za-z_][A-Za-z0-9_]*)*");
  if (kernel.size() > 200 || !std::regex_match(kernel, qualified))
    d.fail("KernelSpecification.KernelName", "'" + shown(kernel) + "' is not a kernel name");
  return kernel;
}

// Where Kernel Tuner looks for the kernel file: as written, then beside the T1 file, then one folder up.
// Empty when it is in none of them.
std::filesystem::path find_kernel_file(const std::string& file, const std::filesystem::path& t1_path) {
  const std::filesystem::path t1_dir =
      t1_path.has_parent_path() ? t1_path.parent_path() : std::filesystem::path(".");
  for (const auto& candidate : {std::filesystem::path(file), t1_dir / file, t1_dir / ".." / file}) {
    std::error_code ec;
    if (std::filesystem::exists(candidate, ec)) return candidate;
  }
  return {};
}

// The family with its kernel file read: its path, bytes and name in the family's folder.
T1Family read_kernel_file(const Doc& d, const json& spec, const std::filesystem::path& t1_path) {
  const std::string file_field = "KernelSpecification.KernelFile";
  const std::string file = d.text(d.need(spec, "KernelFile", file_field), file_field);
  if (file.empty() || file.find('\0') != std::string::npos) d.fail(file_field, "is not a file name");
  const std::filesystem::path kernel_path = find_kernel_file(file, t1_path);
  if (kernel_path.empty())
    d.fail(file_field, "'" + shown(file) + "' not found (as written, beside the T1 file or one folder up)");
  T1Family out;
  out.kernel_path = kernel_path;
  try {
    out.kernel_source = read_limited(kernel_path, 16u << 20);
  } catch (const T1Error& e) {
    d.fail(file_field, e.what());
  }
  out.kernel_file = std::filesystem::path(file).filename().string();
  return out;
}

// The family's name: --name, else the first of the benchmark's and the kernel's names made an identifier.
std::string family_name(const Doc& d, const json& doc, const json& spec, const std::string& name) {
  if (!name.empty()) {
    if (!is_identifier(name)) throw T1Error(d.file() + ": --name '" + shown(name) + "' is not an identifier");
    return name;
  }
  std::string out;
  const json* general = d.find(doc, "General");
  for (const json* v : {general ? d.find(*general, "BenchmarkName") : nullptr, d.find(spec, "BenchmarkName"),
                        d.find(spec, "KernelName")})
    if (v && v->is_string() && out.empty()) out = sanitized_name(v->get<std::string>());
  if (out.empty()) d.fail("General.BenchmarkName", "no name for the family: give --name");
  return out;
}

bool printable_ascii(const std::string& text) {
  return std::none_of(text.begin(), text.end(), [](char c) {
    return static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f;
  });
}

std::vector<std::string> read_compiler_options(const Doc& d, const json& spec) {
  std::vector<std::string> options;
  const json* list = d.find(spec, "CompilerOptions");
  if (!list) return options;
  if (!list->is_array()) d.fail("KernelSpecification.CompilerOptions", "must be a list of strings");
  for (std::size_t i = 0; i < list->size(); ++i) {
    const std::string field = "KernelSpecification.CompilerOptions[" + std::to_string(i) + "]";
    const std::string o = d.text((*list)[i], field);
    if (o.empty() || o[0] != '-' || !printable_ascii(o))
      d.fail(field, "'" + shown(o) + "' is not a compiler option");
    // tiletune compiles for the device it plans or measures; another architecture would not load there.
    if (o.rfind("-arch", 0) == 0 || o.rfind("--gpu-architecture", 0) == 0 || o.rfind("-code", 0) == 0)
      d.fail(field, "'" + shown(o) + "': tiletune chooses the architecture (the device's)");
    options.push_back(o);
  }
  return options;
}

// What family.json is written from.
struct T1Parts {
  std::vector<Param> params;
  std::vector<Translator::Dim> dims;
  Conditions conditions;
  LaunchTx launch;
  Arguments args;
  std::string kernel;
  std::vector<std::string> options;
};

// The default configuration's values, with the problem sizes.
Vars default_vars(const T1Parts& parts) {
  Vars at_defaults;
  for (const auto& p : parts.params) at_defaults[p.name] = p.default_value;
  for (const auto& dim : parts.dims) at_defaults[dim.name] = dim.size;
  return at_defaults;
}

void check_conditions_at_defaults(const Doc& d, const T1Parts& parts) {
  const Vars at_defaults = default_vars(parts);
  for (const auto& [field, e] : parts.conditions.checks) {
    std::string why;
    try {
      if (!e.eval(at_defaults)) why = "does not hold";
    } catch (const ExprError& err) {
      why = std::string("cannot be evaluated (") + err.what() + ")";
    }
    if (!why.empty())
      d.fail(field, why + " at the Default values (" + params_text(parts.params) +
                        "); the default configuration is the family's reference, so it must be valid");
  }
}

// One launch dimension at the defaults: positive, and a block's within a CUDA block's 1024 threads.
std::int64_t launch_at_defaults(const Doc& d, const Tx& t, const std::string& field, bool grid,
                                const T1Parts& parts) {
  std::int64_t v = 0;
  try {
    v = Expr::parse(t.tt).eval(default_vars(parts));
  } catch (const ExprError& err) {
    d.fail(field, std::string("cannot be evaluated at the Default values: ") + err.what());
  }
  if (v < 1)
    d.fail(field, std::string("gives a ") + (grid ? "grid" : "block") + " of " + std::to_string(v) +
                      " at the Default values (" + params_text(parts.params) + ")");
  // Each dimension is checked before it is multiplied, so that the product cannot overflow.
  if (!grid && v > 1024)
    d.fail(field, "gives a block of " + std::to_string(v) + " threads at the Default values (" +
                      params_text(parts.params) + "), more than a CUDA block holds");
  return v;
}

void check_launch_at_defaults(const Doc& d, const T1Parts& parts) {
  const LaunchTx& launch = parts.launch;
  long long threads = 1;
  for (std::size_t i = 0; i < 3; ++i) {
    threads *= launch_at_defaults(
        d, launch.block[i], std::string("KernelSpecification.LocalSize.") + kLaunchAxes[i], false, parts);
    launch_at_defaults(d, launch.grid[i], launch.grid_field[i], true, parts);
  }
  if (threads > 1024)
    d.fail("KernelSpecification.LocalSize",
           std::to_string(threads) + " threads per block at the Default values (" +
               params_text(parts.params) + "), more than a CUDA block holds");
}

std::string sizes_text(const std::vector<Translator::Dim>& dims) {
  std::string sizes;
  for (const auto& dim : dims) {
    if (!sizes.empty()) sizes += 'x';
    sizes += std::to_string(dim.size);
  }
  return sizes;
}

std::string description(const std::filesystem::path& t1_path, const T1Parts& parts) {
  return "Imported from the T1 file " + shown(t1_path.filename().string(), 80) +
         " by tiletune import-space. T1 has no reference kernel: the default configuration (" +
         params_text(parts.params) +
         ") is the truth; it runs first and every other configuration is compared with it. The problem "
         "size is T1's ProblemSize (" +
         sizes_text(parts.dims) +
         "); the metric counts each vector's bytes once (twice when read and written).";
}

ordered_json problem_json(const std::vector<Translator::Dim>& dims) {
  const std::string sizes = sizes_text(dims);
  ordered_json problem;
  problem["dims"] = ordered_json::array();
  problem["checks"] = ordered_json::array();
  for (const auto& dim : dims) {
    problem["dims"].push_back(dim.name);
    // The kernel file fixes its sizes, as Kernel Tuner's T1 files do: the family is for that problem only.
    problem["checks"].push_back({{"expr", dim.name + " == " + std::to_string(dim.size)},
                                 {"message", "the T1 description is for ProblemSize " + sizes + " only"}});
  }
  problem["default_sizes"] = ordered_json::array({sizes});
  return problem;
}

ordered_json launch_json(const LaunchTx& launch) {
  ordered_json block = ordered_json::array(), grid = ordered_json::array();
  for (std::size_t i = 0; i < 3; ++i) {
    block.push_back(launch.block[i].tt);
    grid.push_back(launch.grid[i].tt);
  }
  ordered_json out = {{"block", block}, {"grid", grid}};
  if (launch.shared) out["dynamic_shared_bytes"] = launch.shared->tt;
  return out;
}

// The bytes the metric counts: each vector's once, twice when it is read and written.
std::int64_t vector_bytes(const Doc& d, const std::vector<Buffer>& buffers) {
  std::int64_t bytes = 0;
  for (const auto& b : buffers) {
    const auto element = static_cast<std::int64_t>(size_of(*element_type_from_string(b.type)));
    std::int64_t once = 0;
    if (__builtin_mul_overflow(b.count, element * (b.role == "inout" ? 2 : 1), &once) ||
        __builtin_add_overflow(bytes, once, &bytes))
      d.fail("KernelSpecification.Arguments", "the vectors' sizes in bytes do not fit in 64 bits");
  }
  return bytes;
}

std::string family_json(const Doc& d, const T1Parts& parts, const T1Family& family,
                        const std::filesystem::path& t1_path) {
  ordered_json j;
  j["name"] = family.name;
  j["description"] = description(t1_path, parts);
  j["source"] = family.kernel_file;
  j["kernel"] = parts.kernel;
  j["problem"] = problem_json(parts.dims);
  ordered_json parameters = ordered_json::object(), config = ordered_json::object();
  for (const auto& p : parts.params) {
    parameters[p.name] = {{"values", p.values}, {"default", p.default_value}};
    config[p.name] = p.default_value;
  }
  j["parameters"] = parameters;
  j["constraints"] = parts.conditions.constraints;
  j["launch"] = launch_json(parts.launch);
  j["arguments"] = parts.args.arguments;
  if (!parts.args.constants.empty()) j["constants"] = parts.args.constants;
  j["metric"] = {{"unit", "GB/s"}, {"work", std::to_string(vector_bytes(d, parts.args.buffers))}};
  j["reference"] = {{"family", family.name}, {"config", config}};
  if (!parts.options.empty()) j["compile_options"] = parts.options;
  return j.dump(2) + "\n";
}

}  // namespace

namespace t1 {

std::vector<std::int64_t> evaluate_values(const std::string& python) {
  try {
    return PyEvaluator().list(*parse_python(python));
  } catch (const PyError& e) {
    throw T1Error(e.what());
  }
}

std::string translate_condition(
    const std::string& python, const std::vector<std::pair<std::string, std::vector<std::int64_t>>>& params) {
  try {
    Translator tr({params.begin(), params.end()}, {});
    const Tx t = tr.translate(*parse_python(python), true);
    return t.tt;
  } catch (const PyError& e) {
    throw T1Error(e.what());
  }
}

}  // namespace t1

T1Family translate_t1(const std::string& text, const std::filesystem::path& t1_path,
                      const std::string& name) {
  const Doc d(t1_path.string());
  const json doc = parse_t1(d, text);
  const json& space = d.object(doc, "ConfigurationSpace", "ConfigurationSpace");
  const json& spec = d.object(doc, "KernelSpecification", "KernelSpecification");
  const std::string language =
      d.text(d.need(spec, "Language", "KernelSpecification.Language"), "KernelSpecification.Language");
  if (language != "CUDA")
    d.fail("KernelSpecification.Language",
           "'" + shown(language) + "' kernels cannot be translated: tiletune compiles CUDA");

  T1Parts parts;
  parts.params = read_parameters(d, space);
  parts.dims = read_problem_size(d, spec, parts.params);
  std::map<std::string, std::vector<std::int64_t>> values;
  for (const auto& p : parts.params) values[p.name] = p.values;
  Translator tr(values, parts.dims);
  parts.conditions = read_conditions(d, space, tr);
  parts.launch = read_launch(d, spec, tr, parts.dims);
  parts.args = read_arguments(d, spec, parts.params, parts.dims);
  parts.kernel = read_kernel_name(d, spec);
  T1Family out = read_kernel_file(d, spec, t1_path);
  out.name = family_name(d, doc, spec, name);
  if (out.kernel_file.empty() || out.kernel_file[0] == '.' || out.kernel_file == "family.json")
    out.kernel_file = out.name + ".cu";
  parts.options = read_compiler_options(d, spec);
  for (auto& define : kernel_tuner_defines(out.kernel_source, parts.params, parts.launch))
    parts.options.push_back(std::move(define));

  // The default configuration is the truth, so it must be one that runs: it meets every condition, and its
  // launch is positive and within a block's 1024 threads.
  check_conditions_at_defaults(d, parts);
  check_launch_at_defaults(d, parts);
  out.family_json = family_json(d, parts, out, t1_path);
  return out;
}

T1Family read_t1(const std::filesystem::path& t1_path, const std::string& name) {
  return translate_t1(read_limited(t1_path, 1u << 20), t1_path, name);
}

std::filesystem::path write_t1_family(const T1Family& family, const std::filesystem::path& out_dir,
                                      bool force) {
  namespace fs = std::filesystem;
  const fs::path target = out_dir / family.name;
  std::error_code ec;
  if (fs::exists(target, ec) && !fs::is_directory(target, ec))
    throw T1Error(target.string() + " exists and is not a folder");
  for (const std::string& file : {std::string("family.json"), family.kernel_file})
    if (!force && fs::exists(target / file, ec))
      throw T1Error((target / file).string() + " exists: give --force to replace it");
  const bool created = !fs::exists(out_dir, ec);
  fs::create_directories(out_dir, ec);
  if (ec) throw T1Error("cannot create " + out_dir.string() + ": " + ec.message());
  // Staged beside the destination, so that moving it into place is a rename on one file system.
  std::string pattern = (out_dir / ("." + family.name + ".import-XXXXXX")).string();
  if (!::mkdtemp(pattern.data())) {
    if (created) fs::remove(out_dir, ec);
    throw T1Error("cannot write in " + out_dir.string() + ": " + std::strerror(errno));
  }
  const fs::path staging = pattern;
  // mkdtemp's folder is private; the family's folder gets the permissions a new folder gets here.
  const mode_t mask = ::umask(0);
  ::umask(mask);
  fs::permissions(staging, static_cast<fs::perms>(0777 & ~mask), ec);
  auto undo = [&] {
    fs::remove_all(staging, ec);
    if (created) fs::remove_all(out_dir, ec);
  };
  try {
    for (const auto& [file, bytes] : {std::pair{std::string("family.json"), &family.family_json},
                                      std::pair{family.kernel_file, &family.kernel_source}}) {
      std::ofstream f(staging / file, std::ios::binary | std::ios::trunc);
      f.write(bytes->data(), static_cast<std::streamsize>(bytes->size()));
      if (!f.flush()) throw T1Error("cannot write " + (staging / file).string());
    }
    try {
      load_families({staging});
    } catch (const FamilyError& e) {
      throw T1Error(std::string("the translated family does not load: ") + e.what());
    }
    if (!fs::exists(target, ec)) {
      fs::rename(staging, target, ec);
      if (ec) throw T1Error("cannot move the family into " + target.string() + ": " + ec.message());
    } else {
      for (const std::string& file : {family.kernel_file, std::string("family.json")}) {
        fs::rename(staging / file, target / file, ec);
        if (ec) throw T1Error("cannot write " + (target / file).string() + ": " + ec.message());
      }
      fs::remove_all(staging, ec);
    }
  } catch (...) {
    undo();
    throw;
  }
  return target;
}

}  // namespace tiletune

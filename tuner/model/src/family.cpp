#include "tiletune/family.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "tiletune/json_depth.hpp"
#include "tiletune/library_calls.hpp"
#include "tiletune/macro_name.hpp"
#include "tiletune/utf8.hpp"

namespace tiletune {

using nlohmann::json;

namespace {

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw FamilyError("cannot read " + path.string());
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// Reads family.json fields with messages that name the file and the field.
class Reader {
 public:
  explicit Reader(std::string file) : file_(std::move(file)) {}

  [[noreturn]] void fail(const std::string& what) const { throw FamilyError(file_ + ": " + what); }

  const json& need(const json& obj, const char* key) const {
    if (!obj.is_object() || !obj.contains(key)) fail(std::string("missing field '") + key + "'");
    return obj.at(key);
  }
  std::string text(const json& obj, const char* key, const std::string& fallback = "",
                   bool required = true) const {
    if (!obj.contains(key)) {
      if (required) fail(std::string("missing field '") + key + "'");
      return fallback;
    }
    const json& v = obj.at(key);
    if (v.is_number_integer()) return std::to_string(v.get<std::int64_t>());
    if (!v.is_string()) fail(std::string("field '") + key + "' must be a string");
    return v.get<std::string>();
  }
  Expr expr(const json& v, const std::string& where) const {
    std::string text;
    if (v.is_number_integer())
      text = std::to_string(v.get<std::int64_t>());
    else if (v.is_string())
      text = v.get<std::string>();
    else
      fail(where + " must be an expression string or an integer");
    try {
      return Expr::parse(text);
    } catch (const ExprError& e) {
      fail(where + ": " + e.what());
    }
  }
  std::vector<Condition> conditions(const json& obj, const char* key) const {
    std::vector<Condition> out;
    if (!obj.contains(key)) return out;
    const json& list = obj.at(key);
    if (!list.is_array()) fail(std::string("'") + key + "' must be a list");
    for (const json& item : list) {
      if (item.is_object()) {
        Condition c{expr(need(item, "expr"), key), text(item, "message", "", false)};
        if (c.message.empty()) c.message = c.expr.text();
        out.push_back(std::move(c));
      } else {
        Condition c{expr(item, key), ""};
        c.message = c.expr.text();
        out.push_back(std::move(c));
      }
    }
    return out;
  }

 private:
  std::string file_;
};

// A file the family names (its template, its reference kernel): a regular file directly in the family's own
// folder, not a path out of it, not a link to elsewhere, and of a size a kernel source has.
std::string read_family_file(const Reader& r, const std::filesystem::path& directory, const std::string& name,
                             const std::string& field) {
  if (name.empty() || name.find('/') != std::string::npos || name.find('\\') != std::string::npos ||
      name[0] == '.' || name.find('\0') != std::string::npos)
    r.fail(field + " '" + name + "' must be a file name in the family's folder");
  const std::filesystem::path path = directory / name;
  std::error_code ec;
  const auto status = std::filesystem::symlink_status(path, ec);
  if (ec || !std::filesystem::exists(status)) r.fail(field + ": cannot read " + path.string());
  if (!std::filesystem::is_regular_file(status))
    r.fail(field + ": " + path.string() + " is not a regular file");
  const auto size = std::filesystem::file_size(path, ec);
  if (ec || size > (16u << 20)) r.fail(field + ": " + path.string() + " is larger than 16 MB");
  try {
    return read_text(path);
  } catch (const FamilyError& e) {
    r.fail(field + ": " + e.what());
  }
}

// "fill": {"npy": PATH} | {"raw": PATH}: a relative path inside the family's folder, no way out of it.
Fill parse_file_fill(const Reader& r, const std::filesystem::path& directory, const std::string& kind,
                     const json& value, ElementType type, const std::string& where) {
  const std::string field = where + ".fill." + kind;
  if (!value.is_string()) r.fail(field + " must be a path inside the family's folder");
  const std::filesystem::path rel(value.get<std::string>());
  bool escapes = rel.empty() || rel.is_absolute();
  for (const auto& part : rel) escapes = escapes || part == "..";
  std::error_code ec;
  const auto root = std::filesystem::weakly_canonical(directory, ec);
  const auto full = std::filesystem::weakly_canonical(directory / rel, ec);
  const auto inside = std::mismatch(root.begin(), root.end(), full.begin(), full.end()).first == root.end();
  if (escapes || ec || !inside)
    r.fail(field + " '" + rel.string() + "' must be a path inside the family's folder");
  try {
    return file_fill(full, *input_format_from_string(kind), type);
  } catch (const InputFileError& e) {
    r.fail(field + ": " + e.what());
  }
}

// "constant": v, an integer for an integer element type.
Fill parse_constant_fill(const Reader& r, const json& value, ElementType type, const std::string& where) {
  if (!value.is_number()) r.fail(where + ".fill.constant must be a number");
  Fill f;
  f.kind = Fill::Kind::constant;
  f.lo = f.hi = value.get<double>();
  if (!is_floating(type) && f.lo != static_cast<double>(static_cast<std::int64_t>(f.lo)))
    r.fail(where + ".fill.constant must be an integer for " + to_string(type));
  return f;
}

// "range": [lo, hi] for an integer element type: whole numbers that the type holds.
void check_range_fill(const Reader& r, const Fill& f, ElementType type, const std::string& where) {
  if (is_floating(type))
    r.fail(where + ".fill: range is for integer types; use uniform for " + to_string(type));
  if (f.lo != std::floor(f.lo) || f.hi != std::floor(f.hi)) r.fail(where + ".fill.range must be integers");
  const double type_lo = type == ElementType::i8    ? -128
                         : type == ElementType::i32 ? -2147483648.0
                         : type == ElementType::i64 ? -9.2e18
                                                    : 0;
  const double type_hi = type == ElementType::i8    ? 127
                         : type == ElementType::u8  ? 255
                         : type == ElementType::i32 ? 2147483647.0
                         : type == ElementType::u32 ? 4294967295.0
                                                    : 9.2e18;
  if (f.lo < type_lo || f.hi > type_hi) r.fail(where + ".fill.range does not fit in " + to_string(type));
}

// "uniform": [lo, hi] (floating types) or "range": [lo, hi] (integer types).
Fill parse_interval_fill(const Reader& r, const std::string& kind, const json& value, ElementType type,
                         const std::string& where) {
  if (!value.is_array() || value.size() != 2 || !value[0].is_number() || !value[1].is_number())
    r.fail(where + ".fill." + kind + " must be [lo, hi]");
  Fill f;
  f.lo = value[0].get<double>();
  f.hi = value[1].get<double>();
  if (!std::isfinite(f.lo) || !std::isfinite(f.hi) || !(f.lo <= f.hi))
    r.fail(where + ".fill." + kind + " needs lo <= hi");
  if (kind == "uniform") {
    if (!is_floating(type))
      r.fail(where + ".fill: uniform is for floating types; use range for " + to_string(type));
    f.kind = Fill::Kind::uniform;
  } else {
    check_range_fill(r, f, type, where);
    f.kind = Fill::Kind::range;
  }
  return f;
}

// Reads "fill": {"uniform": [lo, hi]} | {"range": [lo, hi]} | {"constant": v} | {"npy": PATH} | {"raw":
// PATH}.
Fill parse_fill(const Reader& r, const std::filesystem::path& directory, const json& spec, ElementType type,
                const std::string& where) {
  if (!spec.is_object() || spec.size() != 1)
    r.fail(where +
           ".fill must be one of {\"uniform\": [lo, hi]}, {\"range\": [lo, hi]}, {\"constant\": v}, "
           "{\"npy\": PATH}, {\"raw\": PATH}");
  const std::string kind = spec.begin().key();
  const json& value = spec.begin().value();
  if (kind == "npy" || kind == "raw") return parse_file_fill(r, directory, kind, value, type, where);
  if (kind == "constant") return parse_constant_fill(r, value, type, where);
  if (kind != "uniform" && kind != "range")
    r.fail(where + ".fill: unknown distribution '" + kind + "' (uniform, range, constant, npy, raw)");
  return parse_interval_fill(r, kind, value, type, where);
}

std::vector<Expr> expr_list(const Reader& r, const json& list, const std::string& where, std::size_t max) {
  if (!list.is_array() || list.empty() || list.size() > max)
    r.fail(where + " needs 1 to " + std::to_string(max) + " expressions");
  std::vector<Expr> out;
  for (const json& e : list) out.push_back(r.expr(e, where));
  return out;
}

// "default_budgets": {"4096x4096x4096": 390}: the main job's budget at default sizes the family names.
void parse_default_budgets(const Reader& r, const json& problem, KernelFamily& f) {
  if (!problem.contains("default_budgets")) return;
  const json& budgets = problem.at("default_budgets");
  if (!budgets.is_object()) r.fail("problem.default_budgets must be an object of default size: budget");
  for (const auto& [size, budget] : budgets.items()) {
    if (std::find(f.default_sizes.begin(), f.default_sizes.end(), size) == f.default_sizes.end())
      r.fail("problem.default_budgets: '" + size + "' is not one of problem.default_sizes");
    if (!budget.is_number_integer() || budget.get<std::int64_t>() < 1 || budget.get<std::int64_t>() > 1000000)
      r.fail("problem.default_budgets." + size + " must be a whole number of measurements from 1 to 1000000");
    f.default_budgets[size] = budget.get<std::size_t>();
  }
}

void parse_problem(const Reader& r, const json& doc, KernelFamily& f) {
  const json& problem = r.need(doc, "problem");
  const json& dims = r.need(problem, "dims");
  if (!dims.is_array()) r.fail("problem.dims must be a list of identifiers");
  for (const json& d : dims) {
    if (!d.is_string() || !is_identifier(d.get<std::string>())) r.fail("problem.dims must be identifiers");
    f.dims.push_back(d.get<std::string>());
  }
  if (f.dims.empty()) r.fail("problem.dims is empty");
  if (problem.contains("args")) {
    const json& args = problem.at("args");
    if (!args.is_object()) r.fail("problem.args must be an object of name: default");
    for (const auto& [name, value] : args.items()) {
      if (!is_identifier(name)) r.fail("problem.args: '" + name + "' is not an identifier");
      if (!value.is_number_integer()) r.fail("problem.args." + name + " must be an integer default");
      f.problem_args.push_back({name, value.get<std::int64_t>()});
    }
  }
  f.problem_checks = r.conditions(problem, "checks");
  if (problem.contains("default_sizes")) {
    const json& sizes = problem.at("default_sizes");
    if (!sizes.is_array()) r.fail("problem.default_sizes must be a list of size strings");
    for (const json& s : sizes) {
      if (!s.is_string()) r.fail("problem.default_sizes must be size strings");
      f.default_sizes.push_back(s.get<std::string>());
    }
  }
  parse_default_budgets(r, problem, f);
}

void parse_parameters(const Reader& r, const json& doc, KernelFamily& f) {
  const json& params = r.need(doc, "parameters");
  if (!params.is_object() || params.empty()) r.fail("'parameters' must be a non-empty object");
  for (const auto& [name, spec] : params.items()) {
    if (!is_identifier(name)) r.fail("parameter name '" + name + "' must be an identifier");
    if (const std::string why = macro_name_problem(name); !why.empty()) r.fail("parameter name " + why);
    Parameter p{name, {}, 0};
    const json& values = r.need(spec, "values");
    if (!values.is_array() || values.empty())
      r.fail("parameters." + name + ".values must be a non-empty list");
    std::set<std::int64_t> seen;
    for (const json& v : values) {
      if (!v.is_number_integer()) r.fail("parameters." + name + ".values must be integers");
      if (!seen.insert(v.get<std::int64_t>()).second) r.fail("parameters." + name + " repeats a value");
      p.values.push_back(v.get<std::int64_t>());
    }
    if (spec.contains("default") && !spec.at("default").is_number_integer())
      r.fail("parameters." + name + ".default must be an integer");
    p.default_value = spec.contains("default") ? spec.at("default").get<std::int64_t>() : p.values.front();
    if (!seen.count(p.default_value)) r.fail("parameters." + name + ".default is not one of its values");
    f.parameters.push_back(std::move(p));
  }
  f.constraints = r.conditions(doc, "constraints");
}

void parse_launch(const Reader& r, const json& doc, KernelFamily& f) {
  const json& launch = r.need(doc, "launch");
  f.launch.block = expr_list(r, r.need(launch, "block"), "launch.block", 3);
  f.launch.grid = expr_list(r, r.need(launch, "grid"), "launch.grid", 3);
  if (launch.contains("cluster")) f.launch.cluster = expr_list(r, launch.at("cluster"), "launch.cluster", 3);
  f.launch.dynamic_shared_bytes =
      r.expr(launch.value("dynamic_shared_bytes", json("0")), "launch.dynamic_shared_bytes");
  f.launch.static_shared_bytes =
      r.expr(launch.value("static_shared_bytes", json("0")), "launch.static_shared_bytes");
}

ElementType parse_buffer_type(const Reader& r, const std::string& text, const std::string& where) {
  const auto type = element_type_from_string(text);
  if (!type) r.fail(where + ": unknown element type '" + text + "' (" + element_type_list() + ")");
  return *type;
}

// {"name": N, "tensor_map": BUFFER, "dims": [...], "strides": [...], "box": [...], "swizzle": E,
//  "element": TYPE, "oob_fill": "zero" | "nan", "l2_promotion": E}. The buffer, and so the element type, is
// resolved once every argument is read (it may come later in the list).
void parse_tensor_map(const Reader& r, const json& a, const std::string& where, TensorMapArg& map) {
  static const std::set<std::string> known = {"name",    "tensor_map", "dims",     "strides",     "box",
                                              "swizzle", "element",    "oob_fill", "l2_promotion"};
  for (const auto& [key, value] : a.items())
    if (!known.count(key))
      r.fail(
          where + ": unknown field '" + key +
          "' (a tensor map takes tensor_map, dims, strides, box, swizzle, element, oob_fill, l2_promotion)");
  map.buffer = r.text(a, "tensor_map");
  map.dims = expr_list(r, r.need(a, "dims"), where + " dims", 5);
  const std::size_t rank = map.dims.size();
  if (a.contains("strides")) {
    const json& strides = a.at("strides");
    if (!strides.is_array() || strides.size() != rank - 1)
      r.fail(where + ": strides needs " + std::to_string(rank - 1) +
             " expression(s), the byte strides of dims[1.." + std::to_string(rank - 1) + "], for its " +
             std::to_string(rank) + " dims");
    for (const json& e : strides) map.strides.push_back(r.expr(e, where + " strides"));
  }
  map.box = expr_list(r, r.need(a, "box"), where + " box", 5);
  if (map.box.size() != rank)
    r.fail(where + ": box has " + std::to_string(map.box.size()) + " expression(s), dims " +
           std::to_string(rank));
  map.swizzle = r.expr(a.value("swizzle", json("0")), where + " swizzle");
  map.l2_promotion = r.expr(a.value("l2_promotion", json("128")), where + " l2_promotion");
  const std::string fill = r.text(a, "oob_fill", "zero", false);
  if (fill != "zero" && fill != "nan") r.fail(where + ": oob_fill must be zero or nan, got '" + fill + "'");
  map.oob_nan = fill == "nan";
}

// A tensor map's buffer and element type, once every argument is known.
void resolve_tensor_map(const Reader& r, const json& a, const KernelFamily& f, Argument& arg) {
  const std::string where = "argument '" + arg.name + "'";
  TensorMapArg& map = arg.tensor_map;
  const Argument* buffer = find_argument(f, map.buffer);
  if (!buffer || buffer->kind != ArgKind::buffer)
    r.fail(where + ": tensor_map '" + map.buffer + "' is not a buffer of the family");
  map.element = buffer->type;
  const std::string element = r.text(a, "element", "", false);
  if (element == "tfloat32") {
    if (buffer->type != ElementType::f32)
      r.fail(where + ": element tfloat32 needs a float buffer; " + map.buffer + " is " +
             to_string(buffer->type));
    map.tf32 = true;
  } else if (!element.empty()) {
    map.element = parse_buffer_type(r, element, where + " element");
    if (size_of(map.element) != size_of(buffer->type))
      r.fail(where + ": element " + element + " is not the size of " + map.buffer + "'s " +
             to_string(buffer->type));
  }
  if (map.oob_nan && !is_floating(map.element))
    r.fail(where + ": oob_fill nan needs a floating element type, not " + to_string(map.element));
}

Argument parse_argument(const Reader& r, const std::filesystem::path& directory, const json& a,
                        std::size_t index) {
  if (!a.is_object()) r.fail("arguments[" + std::to_string(index) + "] must be an object");
  Argument arg;
  arg.name = r.text(a, "name");
  if (!is_identifier(arg.name)) r.fail("argument name '" + arg.name + "' must be an identifier");
  const std::string where = "argument '" + arg.name + "'";
  if (a.contains("buffer") + a.contains("scalar") + a.contains("tensor_map") != 1)
    r.fail(where + " must be one of a buffer, a scalar or a tensor map");
  if (a.contains("tensor_map")) {
    arg.kind = ArgKind::tensor_map;
    parse_tensor_map(r, a, where, arg.tensor_map);
  } else if (a.contains("buffer")) {
    arg.kind = ArgKind::buffer;
    arg.type = parse_buffer_type(r, r.text(a, "buffer"), where);
    arg.count = r.expr(r.need(a, "count"), where + " count");
    const std::string role = r.text(a, "role");
    if (role == "input")
      arg.role = BufferRole::input;
    else if (role == "output")
      arg.role = BufferRole::output;
    else if (role == "inout")
      arg.role = BufferRole::inout;
    else
      r.fail(where + ": role must be input, output or inout, got '" + role + "'");
    arg.fill = default_fill(arg.type);
    if (a.contains("fill")) {
      if (arg.role == BufferRole::output)
        r.fail(where + ": an output is poisoned, not filled; drop 'fill' or make it inout");
      arg.fill = parse_fill(r, directory, a.at("fill"), arg.type, where);
    }
    if (a.contains("dims")) arg.dims = expr_list(r, a.at("dims"), where + " dims", 8);
    for (const char* key : {"value"})
      if (a.contains(key)) r.fail(where + ": a buffer takes no '" + key + "'");
  } else {
    arg.kind = ArgKind::scalar;
    const std::string type = r.text(a, "scalar");
    const auto t = scalar_type_from_string(type);
    if (!t) r.fail(where + ": scalar type must be one of " + scalar_type_list() + ", got '" + type + "'");
    arg.type = *t;
    const json& value = r.need(a, "value");
    if (value.is_number_float()) {
      if (!is_floating(arg.type))
        r.fail(where + ": value " + value.dump() + " is not an integer for a " + type);
      arg.real = value.get<double>();
      arg.value = Expr::parse("0");
    } else {
      arg.value = r.expr(value, where + " value");
    }
    for (const char* key : {"count", "role", "fill", "dims"})
      if (a.contains(key)) r.fail(where + ": a scalar takes no '" + std::string(key) + "'");
  }
  return arg;
}

void parse_arguments(const Reader& r, const json& doc, KernelFamily& f) {
  const json& list = r.need(doc, "arguments");
  if (!list.is_array() || list.empty()) r.fail("'arguments' must be a non-empty list");
  std::set<std::string> names;
  for (std::size_t i = 0; i < list.size(); ++i) {
    Argument arg = parse_argument(r, f.directory, list[i], i);
    if (!names.insert(arg.name).second) r.fail("argument '" + arg.name + "' appears twice");
    f.arguments.push_back(std::move(arg));
  }
  for (std::size_t i = 0; i < list.size(); ++i)
    if (f.arguments[i].kind == ArgKind::tensor_map) resolve_tensor_map(r, list[i], f, f.arguments[i]);
  if (std::none_of(f.arguments.begin(), f.arguments.end(), [](const Argument& a) { return a.is_output(); }))
    r.fail("'arguments' has no output or inout buffer: nothing could be checked");
  if (!doc.contains("constants")) return;
  const json& constants = doc.at("constants");
  if (!constants.is_array()) r.fail("'constants' must be a list");
  for (const json& c : constants) {
    ConstantSymbol sym;
    sym.name = r.text(c, "name");
    if (!is_identifier(sym.name)) r.fail("constant name '" + sym.name + "' must be an identifier");
    const std::string where = "constant '" + sym.name + "'";
    sym.type = parse_buffer_type(r, r.text(c, "type", "float", false), where);
    sym.count = r.expr(r.need(c, "count"), where + " count");
    sym.fill = c.contains("fill") ? parse_fill(r, f.directory, c.at("fill"), sym.type, where)
                                  : default_fill(sym.type);
    if (names.count(sym.name)) r.fail(where + " has the name of an argument");
    names.insert(sym.name);
    f.constants.push_back(std::move(sym));
  }
}

void parse_metric(const Reader& r, const json& doc, KernelFamily& f) {
  const json& metric = r.need(doc, "metric");
  f.metric_unit = r.text(metric, "unit");
  if (f.metric_unit != "GFLOP/s" && f.metric_unit != "GB/s") r.fail("metric.unit must be GFLOP/s or GB/s");
  f.metric_work = r.expr(r.need(metric, "work"), "metric.work");
}

// "arguments": the family's argument names and {"scalar": TYPE, "value": EXPR} entries, in the reference
// kernel's order; by default all of the family's arguments in order. Every output must be passed: the
// reference computes it.
// A kernel's argument list: the family's argument names and {"scalar": TYPE, "value": EXPR}.
std::vector<ReferenceArgument> kernel_arguments(const Reader& r, const json& args, const KernelFamily& f,
                                                const std::string& where) {
  std::vector<ReferenceArgument> out;
  const std::string what =
      where + " must list the family's argument names and {\"scalar\": TYPE, \"value\": EXPR}";
  if (!args.is_array()) r.fail(what);
  for (const json& a : args) {
    if (a.is_string()) {
      const std::string name = a.get<std::string>();
      const Argument* arg = find_argument(f, name);
      if (!arg) r.fail(where + ": '" + name + "' is not one of the family's arguments");
      if (arg->kind == ArgKind::tensor_map)
        r.fail(where + ": '" + name + "' is a tensor map; a " +
               (where.rfind("reference", 0) == 0 ? "reference" : "setup") + " kernel takes the buffer " +
               arg->tensor_map.buffer + " itself");
      out.push_back({name, ElementType::i32, Expr::parse("0")});
    } else if (a.is_object() && a.contains("scalar") && a.contains("value") && a.size() == 2) {
      const std::string type = r.text(a, "scalar");
      const auto t = scalar_type_from_string(type);
      if (!t || is_floating(*t)) r.fail(where + ": scalar type must be int or long, got '" + type + "'");
      out.push_back({"", *t, r.expr(a.at("value"), where + " value")});
    } else {
      r.fail(what);
    }
  }
  return out;
}

std::vector<ReferenceArgument> reference_arguments(const Reader& r, const json& ref, const KernelFamily& f) {
  std::vector<ReferenceArgument> out;
  if (!ref.contains("arguments")) {
    for (const auto& a : f.arguments)
      if (a.kind != ArgKind::tensor_map) out.push_back({a.name, a.type, Expr::parse("0")});
    return out;
  }
  out = kernel_arguments(r, ref.at("arguments"), f, "reference.arguments");
  for (const auto& a : f.arguments)
    if (a.is_output() &&
        std::none_of(out.begin(), out.end(), [&](const ReferenceArgument& x) { return x.name == a.name; }))
      r.fail("reference.arguments must pass the output '" + a.name + "': the reference computes it");
  return out;
}

// "setup": [{"kernel": FILE, "name": NAME, "arguments": [...], "block": [...], "grid": [...]}, ...]
void parse_setup(const Reader& r, const json& doc, KernelFamily& f) {
  if (!doc.contains("setup")) return;
  const json& list = doc.at("setup");
  if (!list.is_array()) r.fail("'setup' must be a list of kernels");
  static const std::set<std::string> known = {"kernel", "name", "arguments", "block", "grid"};
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string where = "setup[" + std::to_string(i) + "]";
    const json& s = list[i];
    if (!s.is_object()) r.fail(where + " must be an object");
    for (const auto& [key, value] : s.items())
      if (!known.count(key)) r.fail(where + ": unknown field '" + key + "'");
    ReferenceKernel k;
    k.directory = f.directory;
    k.file = r.text(s, "kernel");
    k.source = read_family_file(r, f.directory, k.file, where + ".kernel");
    k.name = r.text(s, "name", std::filesystem::path(k.file).stem().string(), false);
    if (!is_identifier(k.name)) r.fail(where + ".name '" + k.name + "' must be an identifier");
    k.arguments = kernel_arguments(r, r.need(s, "arguments"), f, where + ".arguments");
    for (const auto& a : k.arguments)
      if (const Argument* arg = find_argument(f, a.name);
          arg && arg->is_output() && arg->role == BufferRole::output)
        r.fail(where + ".arguments: '" + a.name + "' is an output; a setup kernel derives inputs");
    k.block = expr_list(r, r.need(s, "block"), where + ".block", 3);
    k.grid = expr_list(r, r.need(s, "grid"), where + ".grid", 3);
    f.setup.push_back({std::move(k)});
  }
}

std::optional<double> optional_number(const Reader& r, const json& obj, const char* key, bool positive) {
  if (!obj.contains(key)) return std::nullopt;
  const json& v = obj.at(key);
  if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0 ||
      (positive && v.get<double>() == 0))
    r.fail(std::string("reference.") + key + " must be a " + (positive ? "positive" : "non-negative") +
           " number");
  return v.get<double>();
}

// "max_differing": an integer count of elements, or a fraction below 1 of each integer output's elements.
void parse_max_differing(const Reader& r, const json& ref, Reference& out) {
  if (!ref.contains("max_differing")) return;
  const json& v = ref.at("max_differing");
  if (v.is_number_unsigned() || (v.is_number_integer() && v.get<std::int64_t>() >= 0)) {
    out.max_differing = v.get<std::uint64_t>();
    return;
  }
  if (!v.is_number_float() || !(v.get<double>() >= 0 && v.get<double>() < 1))
    r.fail("reference.max_differing must be a count of elements (an integer >= 0) or a fraction in [0, 1)");
  out.max_differing_fraction = v.get<double>();
}

// Fails on a field "reference" does not take, naming the forms that replaced the old ones.
void check_reference_fields(const Reader& r, const json& ref) {
  static const std::set<std::string> known = {"kernel",  "name", "arguments",    "block",       "grid",
                                              "outputs", "rtol", "atol",         "scale_floor", "family",
                                              "config",  "from", "max_differing"};
  for (const auto& [key, value] : ref.items())
    if (!known.count(key)) {
      if (key == "kind" || key == "tolerance" || key == "math")
        r.fail("reference." + key +
               " is gone: a family brings a reference kernel (\"kernel\"), names another "
               "family's configuration (\"family\", \"config\") or reference (\"from\"); tolerances are "
               "rtol/atol");
      r.fail("reference: unknown field '" + key + "'");
    }
}

// "family": NAME, "config": {parameter: value}: another family's configuration is the truth.
void parse_family_reference(const Reader& r, const json& ref, Reference& out) {
  out.kind = Reference::Kind::family;
  out.family = r.text(ref, "family");
  const json& config = r.need(ref, "config");
  if (!config.is_object()) r.fail("reference.config must be an object of parameter: value");
  for (const auto& [name, value] : config.items()) {
    if (!value.is_number_integer()) r.fail("reference.config." + name + " must be an integer");
    out.config[name] = value.get<std::int64_t>();
  }
  for (const char* key : {"name", "arguments", "block", "grid", "outputs"})
    if (ref.contains(key)) r.fail(std::string("reference.") + key + " goes with \"kernel\", not \"family\"");
}

// "from": NAME: another family's reference kernel.
void parse_from_reference(const Reader& r, const json& ref, const KernelFamily& f, Reference& out) {
  out.from = r.text(ref, "from");
  for (const char* key : {"outputs", "config"})
    if (ref.contains(key)) r.fail(std::string("reference.") + key + " goes with \"kernel\", not \"from\"");
  // Its own kernel of the shared file, argument list (e.g. a boundary mode) or launch where this family
  // needs another; what is not given here is the other family's.
  out.kernel.name = r.text(ref, "name", "", false);
  if (ref.contains("name") && !is_identifier(out.kernel.name))
    r.fail("reference.name '" + out.kernel.name + "' must be an identifier");
  if (ref.contains("arguments")) out.kernel.arguments = reference_arguments(r, ref, f);
  if (ref.contains("block")) out.kernel.block = expr_list(r, ref.at("block"), "reference.block", 3);
  if (ref.contains("grid")) out.kernel.grid = expr_list(r, ref.at("grid"), "reference.grid", 3);
}

// "kernel": FILE: a reference kernel in the family's own folder.
void parse_kernel_reference(const Reader& r, const json& ref, const KernelFamily& f, ReferenceKernel& k) {
  k.directory = f.directory;
  k.file = r.text(ref, "kernel");
  k.source = read_family_file(r, f.directory, k.file, "reference.kernel");
  k.name = r.text(ref, "name", std::filesystem::path(k.file).stem().string(), false);
  if (!is_identifier(k.name)) r.fail("reference.name '" + k.name + "' must be an identifier");
  k.arguments = reference_arguments(r, ref, f);
  k.block = expr_list(r, r.need(ref, "block"), "reference.block", 3);
  k.grid = expr_list(r, r.need(ref, "grid"), "reference.grid", 3);
  const std::string outputs = r.text(ref, "outputs", "double", false);
  if (outputs != "double" && outputs != "native")
    r.fail("reference.outputs must be double or native, got '" + outputs + "'");
  k.double_outputs = outputs == "double";
}

void parse_reference(const Reader& r, const json& doc, KernelFamily& f) {
  const json& ref = r.need(doc, "reference");
  if (!ref.is_object()) r.fail("'reference' must be an object");
  Reference& out = f.reference;
  check_reference_fields(r, ref);
  out.rtol = optional_number(r, ref, "rtol", false);
  out.atol = optional_number(r, ref, "atol", false);
  out.scale_floor = optional_number(r, ref, "scale_floor", true);
  parse_max_differing(r, ref, out);
  const int forms = ref.contains("kernel") + ref.contains("family") + ref.contains("from");
  if (forms != 1) r.fail("reference needs exactly one of \"kernel\" (a file here), \"family\" or \"from\"");
  if (ref.contains("family"))
    parse_family_reference(r, ref, out);
  else if (ref.contains("from"))
    parse_from_reference(r, ref, f, out);
  else
    parse_kernel_reference(r, ref, f, out.kernel);
}

// {"library": NAME, "operands": {operand: buffer name or scalar expression}}: a library call to compare with.
LibraryBaseline parse_library_baseline(const Reader& r, const json& b, const KernelFamily& f) {
  LibraryBaseline lib;
  lib.library = r.text(b, "library");
  const LibraryCallInfo* call = find_library_call(lib.library);
  if (!call) r.fail("baselines: unknown library '" + lib.library + "' (" + library_call_list() + ")");
  const std::string where = "baselines." + lib.library;
  const json& operands = r.need(b, "operands");
  if (!operands.is_object()) r.fail(where + ".operands must be an object of operand: name");
  auto listed = [](const std::vector<std::string>& v, const std::string& k) {
    return std::find(v.begin(), v.end(), k) != v.end();
  };
  for (const auto& [op, value] : operands.items()) {
    if (listed(call->buffers, op) || listed(call->optional_buffers, op)) {
      if (!value.is_string()) r.fail(where + ".operands." + op + " must name a buffer");
      const Argument* a = find_argument(f, value.get<std::string>());
      if (!a || a->kind != ArgKind::buffer)
        r.fail(where + ".operands." + op + ": '" + value.get<std::string>() +
               "' is not a buffer of the family");
      lib.buffers[op] = value.get<std::string>();
    } else if (listed(call->scalars, op)) {
      lib.scalars[op] = r.expr(value, where + ".operands." + op);
    } else {
      r.fail(where + ".operands: '" + op + "' is not an operand of " + lib.library);
    }
  }
  for (const auto& op : call->buffers)
    if (!lib.buffers.count(op)) r.fail(where + ".operands needs '" + op + "'");
  for (const auto& op : call->scalars)
    if (!lib.scalars.count(op)) r.fail(where + ".operands needs '" + op + "'");
  return lib;
}

void parse_baselines(const Reader& r, const json& doc, KernelFamily& f) {
  if (doc.contains("baseline"))
    r.fail("'baseline' is now 'baselines': a list of family names and library calls");
  if (!doc.contains("baselines")) return;
  const json& list = doc.at("baselines");
  if (!list.is_array()) r.fail("'baselines' must be a list of family names and {\"library\": ...} objects");
  for (const json& b : list) {
    if (b.is_string()) {
      f.baselines.push_back(b.get<std::string>());
      continue;
    }
    if (!b.is_object() || !b.contains("library"))
      r.fail("'baselines' must be a list of family names and {\"library\": ...} objects");
    f.library_baselines.push_back(parse_library_baseline(r, b, f));
  }
}

// Fails on an expression that reads a name outside `allowed`.
void check_expr_names(const Reader& r, const Expr& e, const std::set<std::string>& allowed,
                      const std::string& where) {
  for (const auto& v : e.variables())
    if (!allowed.count(v)) r.fail(where + " reads unknown name '" + v + "' in '" + e.text() + "'");
}

void check_expr_names(const Reader& r, const std::vector<Expr>& list, const std::set<std::string>& allowed,
                      const std::string& where) {
  for (const auto& e : list) check_expr_names(r, e, allowed, where);
}

// The names a constraint or launch expression may read: the problem's, the parameters' (which must not take
// a reserved or a problem variable's name) and the device's compute capability and SM count.
std::set<std::string> configuration_names(const Reader& r, const KernelFamily& f,
                                          const std::set<std::string>& problem_names) {
  std::set<std::string> known = problem_names;
  for (const auto& p : f.parameters) {
    if (p.name == kDeviceCcVar)
      r.fail("parameters." + p.name + ": the name is reserved for the device's compute capability");
    if (p.name == kDeviceSmsVar)
      r.fail("parameters." + p.name + ": the name is reserved for the device's SM count");
    if (problem_names.count(p.name)) r.fail("parameters." + p.name + ": the name is a problem variable too");
    known.insert(p.name);
  }
  known.insert(kDeviceCcVar);
  known.insert(kDeviceSmsVar);
  return known;
}

void check_launch_names(const Reader& r, const KernelFamily& f, const std::set<std::string>& known) {
  check_expr_names(r, f.launch.block, known, "launch.block");
  check_expr_names(r, f.launch.grid, known, "launch.grid");
  check_expr_names(r, f.launch.dynamic_shared_bytes, known, "launch.dynamic_shared_bytes");
  check_expr_names(r, f.launch.static_shared_bytes, known, "launch.static_shared_bytes");
  check_expr_names(r, f.launch.cluster, known, "launch.cluster");
}

// A tensor map reads the configuration's names; the other arguments and the constants only the problem's.
void check_argument_names(const Reader& r, const KernelFamily& f, const std::set<std::string>& known,
                          const std::set<std::string>& problem_names) {
  for (const auto& a : f.arguments) {
    if (a.kind == ArgKind::tensor_map) {
      const TensorMapArg& m = a.tensor_map;
      const std::string where = "argument " + a.name;
      check_expr_names(r, m.dims, known, where + " dims");
      check_expr_names(r, m.strides, known, where + " strides");
      check_expr_names(r, m.box, known, where + " box");
      check_expr_names(r, m.swizzle, known, where + " swizzle");
      check_expr_names(r, m.l2_promotion, known, where + " l2_promotion");
      continue;
    }
    check_expr_names(r, a.kind == ArgKind::buffer ? a.count : a.value, problem_names, "argument " + a.name);
    check_expr_names(r, a.dims, problem_names, "argument " + a.name + " dims");
  }
  for (const auto& c : f.constants) check_expr_names(r, c.count, problem_names, "constant " + c.name);
}

// A reference or setup kernel's launch may read the problem and the SM count; its scalar arguments only the
// problem.
void check_kernel_names(const Reader& r, const ReferenceKernel& k, const std::set<std::string>& problem_names,
                        const std::string& where, const std::string& arguments_where) {
  std::set<std::string> device_problem = problem_names;
  device_problem.insert(kDeviceSmsVar);
  check_expr_names(r, k.block, device_problem, where + "block");
  check_expr_names(r, k.grid, device_problem, where + "grid");
  for (const auto& a : k.arguments)
    if (a.name.empty()) check_expr_names(r, a.value, problem_names, arguments_where);
}

// A default problem is "SIZE" or "SIZE name=value,...".
void check_default_sizes(const Reader& r, const KernelFamily& f) {
  for (const auto& d : f.default_sizes) {
    try {
      if (parse_problem_text(d).dims.size() != f.dims.size())
        r.fail("default size '" + d + "' does not have " + std::to_string(f.dims.size()) + " dimensions");
    } catch (const std::invalid_argument& e) {
      r.fail(std::string("default size: ") + e.what());
    }
  }
}

// Every expression must only read names the family defines.
void check_names(const Reader& r, const KernelFamily& f) {
  std::set<std::string> problem_names;
  for (const auto& d : f.dims) problem_names.insert(d);
  for (const auto& a : f.problem_args) problem_names.insert(a.name);
  const std::set<std::string> known = configuration_names(r, f, problem_names);
  for (const auto& c : f.problem_checks) check_expr_names(r, c.expr, problem_names, "problem.checks");
  for (const auto& c : f.constraints) check_expr_names(r, c.expr, known, "constraints");
  check_launch_names(r, f, known);
  check_argument_names(r, f, known, problem_names);
  check_expr_names(r, f.metric_work, problem_names, "metric.work");
  check_kernel_names(r, f.reference.kernel, problem_names, "reference.", "reference.arguments");
  for (const auto& s : f.setup) {
    const std::string where = "setup kernel " + s.kernel.name;
    check_kernel_names(r, s.kernel, problem_names, where + " ", where + " arguments");
  }
  for (const auto& lib : f.library_baselines)
    for (const auto& [op, e] : lib.scalars)
      check_expr_names(r, e, problem_names, "baselines." + lib.library + ".operands." + op);
  check_default_sizes(r, f);
}

void hash_template(KernelFamily& f) { f.template_hash = template_hash_of(f); }

KernelFamily parse_family(const std::filesystem::path& directory, const std::string& description_text) {
  const std::string file = (directory / "family.json").string();
  Reader r(file);
  if (const std::string why = nul_byte_problem(description_text); !why.empty()) r.fail(why);
  if (json_depth(description_text) > kMaxJsonDepth)
    r.fail("nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
  json doc;
  try {
    doc = json::parse(description_text);
  } catch (const json::parse_error& e) {
    std::string what = e.what();
    throw FamilyError(file + ": not valid JSON (" + what.substr(what.find(']') + 2) + ")");
  }
  if (!doc.is_object()) r.fail("must hold a JSON object");

  KernelFamily f;
  f.directory = directory;
  f.description_json = description_text;
  f.name = r.text(doc, "name");
  if (!is_identifier(f.name)) r.fail("family name '" + f.name + "' must be an identifier");
  f.description = r.text(doc, "description", "", false);
  f.source_file = r.text(doc, "source");
  f.kernel = r.text(doc, "kernel");
  f.source_from = r.text(doc, "source_from", "", false);
  if (doc.contains("source_from")) {
    if (!is_identifier(f.source_from)) r.fail("source_from '" + f.source_from + "' must be a family name");
    if (f.source_from == f.name) r.fail("source_from names the family itself");
  } else {
    f.source = read_family_file(r, directory, f.source_file, "source");
  }
  f.arch_suffix = r.text(doc, "arch_suffix", "", false);
  if (f.arch_suffix != "" && f.arch_suffix != "a" && f.arch_suffix != "f")
    r.fail("arch_suffix must be \"\", \"a\" (sm_90a: wgmma, setmaxnreg) or \"f\", got '" + f.arch_suffix +
           "'");
  parse_problem(r, doc, f);
  parse_parameters(r, doc, f);
  parse_launch(r, doc, f);
  parse_arguments(r, doc, f);
  parse_metric(r, doc, f);
  parse_setup(r, doc, f);
  parse_reference(r, doc, f);
  if (doc.contains("compile_options")) {
    const json& options = doc.at("compile_options");
    if (!options.is_array()) r.fail("'compile_options' must be a list of strings");
    for (const json& o : options) {
      if (!o.is_string()) r.fail("'compile_options' must be a list of strings");
      f.compile_options.push_back(o.get<std::string>());
    }
  }
  parse_baselines(r, doc, f);
  check_names(r, f);
  if (f.source_from.empty()) hash_template(f);  // otherwise once load_families has read the source
  return f;
}

// Reads the template from the folder of the family "source_from" names (which must be loaded), under the
// same file-name rules as a family's own files.
void resolve_source(KernelFamily& f, const std::vector<KernelFamily>& all) {
  const Reader r((f.directory / "family.json").string());
  const auto it =
      std::find_if(all.begin(), all.end(), [&](const KernelFamily& g) { return g.name == f.source_from; });
  if (it == all.end()) r.fail("source_from names family '" + f.source_from + "', which is not loaded");
  f.source = read_family_file(r, it->directory, f.source_file, "source");
  hash_template(f);
}

// Every buffer of `owner` among `names` must be a buffer here too; with `same_kernel` (the reference is the
// owner's own kernel), of the same type and role.
void check_reference_buffers(const Reader& r, const KernelFamily& f, const std::string& target,
                             const std::vector<std::string>& names, const KernelFamily& owner,
                             bool same_kernel) {
  for (const auto& name : names) {
    const Argument* theirs = find_argument(owner, name);
    const Argument* ours = find_argument(f, name);
    if (!theirs || theirs->kind != ArgKind::buffer) continue;
    if (!ours || ours->kind != ArgKind::buffer)
      r.fail("reference " + target + " needs a buffer '" + name + "' that this family does not have");
    if (same_kernel && (ours->type != theirs->type || ours->is_output() != theirs->is_output()))
      r.fail("reference " + target + ": buffer '" + name + "' differs here in type or role");
  }
}

// Takes the other family's reference kernel, with what this family gives of its own (kernel name, argument
// list, launch) in place of its parts; returns whether it is still the other family's own kernel.
bool take_reference_kernel(const Reader& r, const std::string& target, const ReferenceKernel& theirs,
                           ReferenceKernel& kernel) {
  ReferenceKernel own = std::move(kernel);
  const bool same_kernel = own.name.empty() || own.name == theirs.name;
  kernel = theirs;
  if (!own.arguments.empty()) kernel.arguments = std::move(own.arguments);
  if (!own.block.empty()) kernel.block = std::move(own.block);
  if (!own.grid.empty()) kernel.grid = std::move(own.grid);
  if (!own.name.empty()) {
    if (kernel.source.find(own.name) == std::string::npos)
      r.fail("reference.name '" + own.name + "' is not a kernel of " + target + "'s " + kernel.file);
    kernel.name = std::move(own.name);
  }
  return same_kernel;
}

// "from": the other family's reference kernel, which must fit this family's arguments and compute its
// outputs.
void resolve_from_reference(const Reader& r, KernelFamily& f, const KernelFamily& other) {
  Reference& ref = f.reference;
  const std::string& target = ref.from;
  if (other.reference.kind != Reference::Kind::kernel || !other.reference.from.empty())
    r.fail("reference.from '" + target + "': that family has no reference kernel of its own");
  const bool same_kernel = take_reference_kernel(r, target, other.reference.kernel, ref.kernel);
  std::vector<std::string> names;
  for (const auto& a : ref.kernel.arguments)
    if (!a.name.empty()) names.push_back(a.name);
  check_reference_buffers(r, f, target, names, other, same_kernel);
  for (const auto& a : names) {
    const Argument* ours = find_argument(f, a);
    if (!ours)
      r.fail("reference " + target + " needs an argument '" + a + "' that this family does not have");
    if (ours->kind == ArgKind::tensor_map)
      r.fail("reference " + target + " would receive the tensor map '" + a +
             "': a reference kernel takes buffers and scalars");
  }
  for (const auto& a : f.arguments)
    if (a.is_output() && std::find(names.begin(), names.end(), a.name) == names.end())
      r.fail("reference " + target + " does not compute the output '" + a.name + "'");
}

// "family": a configuration of the other family, whose buffers must be here and which must compute this
// family's outputs.
void resolve_family_reference(const Reader& r, KernelFamily& f, const KernelFamily& other) {
  Reference& ref = f.reference;
  const std::string& target = ref.family;
  std::vector<std::string> names;
  for (const auto& a : other.arguments) names.push_back(a.name);
  check_reference_buffers(r, f, target, names, other, true);
  for (const auto& a : f.arguments)
    if (a.is_output() && !find_argument(other, a.name))
      r.fail("reference family " + target + " does not compute the output '" + a.name + "'");
  for (const auto& [k, v] : ref.config)
    if (std::none_of(other.parameters.begin(), other.parameters.end(),
                     [&k = k](const Parameter& p) { return p.name == k; }))
      r.fail("reference.config: " + target + " has no parameter '" + k + "'");
  ref.family_def = std::make_shared<const KernelFamily>(other);
}

// Resolves "from" and "family" references against the loaded families and checks that they fit.
void resolve_reference(KernelFamily& f, const std::vector<KernelFamily>& all) {
  const Reference& ref = f.reference;
  if (ref.kind == Reference::Kind::kernel && ref.from.empty()) return;
  const Reader r((f.directory / "family.json").string());
  const std::string target = ref.from.empty() ? ref.family : ref.from;
  const auto it =
      std::find_if(all.begin(), all.end(), [&](const KernelFamily& g) { return g.name == target; });
  if (it == all.end()) r.fail("reference names family '" + target + "', which is not loaded");
  // A family may be its own truth: one of its configurations (say the defaults, as an imported T1 space
  // that has no reference kernel) runs first, and the others are compared with it.
  if (it->name == f.name && !ref.from.empty()) r.fail("reference.from names the family itself");
  if (!ref.from.empty())
    resolve_from_reference(r, f, *it);
  else
    resolve_family_reference(r, f, *it);
}

}  // namespace

std::string to_string(BufferRole role) {
  switch (role) {
    case BufferRole::input:
      return "input";
    case BufferRole::output:
      return "output";
    case BufferRole::inout:
      return "inout";
  }
  return "input";
}

Fill default_fill(ElementType type) {
  const auto hashed = [](Fill::Kind kind, double lo, double hi) {
    Fill f;
    f.kind = kind;
    f.lo = lo;
    f.hi = hi;
    return f;
  };
  switch (type) {
    case ElementType::i8:
      return hashed(Fill::Kind::range, -100, 100);
    case ElementType::u8:
      return hashed(Fill::Kind::range, 0, 255);
    case ElementType::i32:
    case ElementType::i64:
      return hashed(Fill::Kind::range, -1000, 1000);
    case ElementType::u32:
      return hashed(Fill::Kind::range, 0, 1000);
    default:
      return hashed(Fill::Kind::uniform, -1, 1);
  }
}

Tolerance default_tolerance(ElementType output) {
  switch (output) {
    case ElementType::f32:
      return {1e-4, 0, std::nullopt};
    case ElementType::f64:
      return {1e-10, 0, std::nullopt};
    case ElementType::f16:
      return {1e-2, 0, std::nullopt};
    case ElementType::bf16:
      return {2e-2, 0, std::nullopt};
    default:
      return {0, 0, std::nullopt};  // integers compare exactly
  }
}

ElementType Reference::truth_type(ElementType output) const {
  const bool native = kind == Kind::family || !kernel.double_outputs;
  return is_floating(output) && !native ? ElementType::f64 : output;
}

Tolerance Reference::tolerance_for(ElementType output) const {
  Tolerance t = default_tolerance(output);
  if (!is_floating(output)) return t;
  if (rtol) t.rtol = *rtol;
  if (atol) t.atol = *atol;
  if (scale_floor) t.scale_floor = *scale_floor;
  return t;
}

std::uint64_t Reference::allowed_differing(ElementType output, std::uint64_t count) const {
  if (is_floating(output)) return 0;
  if (max_differing) return *max_differing;
  if (max_differing_fraction)
    return static_cast<std::uint64_t>(*max_differing_fraction * static_cast<double>(count));
  return 0;
}

const Argument* find_argument(const KernelFamily& family, const std::string& name) {
  for (const auto& a : family.arguments)
    if (a.name == name) return &a;
  return nullptr;
}

std::string content_hash(const std::string& text) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

Params KernelFamily::default_params() const {
  Params p;
  for (const auto& param : parameters) p[param.name] = param.default_value;
  return p;
}

std::string KernelFamily::space_hash() const {
  std::string text;
  for (const auto& p : parameters) {
    text += p.name + ':';
    for (auto v : p.values) text += std::to_string(v) + ',';
    text += ';';
  }
  for (const auto& c : constraints) text += c.expr.text() + ';';
  return content_hash(text);
}

Vars KernelFamily::vars(const ProblemKey& problem, const Params& params) const {
  Vars v;
  for (std::size_t i = 0; i < dims.size() && i < problem.dims.size(); ++i) v[dims[i]] = problem.dims[i];
  for (const auto& a : problem_args) v[a.name] = a.default_value;
  for (const auto& [k, val] : problem.args) v[k] = val;
  for (const auto& [k, val] : params) v[k] = val;
  return v;
}

ProblemKey default_problem(const KernelFamily& family, const std::string& size_text) {
  const ProblemKey given = parse_problem_text(size_text);
  return family.make_problem(given.dims, given.args);
}

ProblemKey KernelFamily::make_problem(const std::vector<std::int64_t>& given_dims,
                                      const std::map<std::string, std::int64_t>& given_args) const {
  std::string dim_list;
  for (const auto& d : dims) dim_list += (dim_list.empty() ? "" : "x") + d;
  if (given_dims.size() != dims.size())
    throw FamilyError(name + ": size needs " + std::to_string(dims.size()) + " dimension(s) (" + dim_list +
                      "), got " + std::to_string(given_dims.size()));
  for (auto d : given_dims)
    if (d <= 0) throw FamilyError(name + ": every dimension must be positive");
  ProblemKey key;
  key.dims = given_dims;
  for (const auto& a : problem_args) key.args[a.name] = a.default_value;
  for (const auto& [k, v] : given_args) {
    if (!key.args.count(k)) {
      std::string known;
      for (const auto& a : problem_args) known += (known.empty() ? "" : ", ") + a.name;
      throw FamilyError(name + ": unknown problem argument '" + k + "'" +
                        (known.empty() ? " (it takes none)" : " (it takes " + known + ")"));
    }
    key.args[k] = v;
  }
  const Vars v = vars(key, {});
  for (const auto& c : problem_checks)
    if (!c.expr.eval(v))
      throw FamilyError(name + ": problem " + key.size_text() +
                        (key.args.empty() ? "" : " " + key.args_text()) + " is invalid: " + c.message);
  return key;
}

std::string KernelFamily::source_for(const Params& params) const {
  std::string out;
  for (const auto& [k, v] : params) out += "#define " + k + " " + std::to_string(v) + "\n";
  out += "#line 1 \"" + source_file + "\"\n";
  out += source;
  return out;
}

KernelFamily load_family(const std::filesystem::path& directory) {
  const auto desc = directory / "family.json";
  std::error_code ec;
  if (!std::filesystem::is_regular_file(desc, ec)) throw FamilyError(desc.string() + ": no such file");
  if (std::filesystem::file_size(desc, ec) > (1u << 20))
    throw FamilyError(desc.string() + ": larger than 1 MB");
  return parse_family(directory, read_text(desc));
}

std::vector<KernelFamily> load_families(const std::vector<std::filesystem::path>& roots) {
  std::vector<KernelFamily> out;
  for (const auto& root : roots) {
    if (!std::filesystem::is_directory(root))
      throw FamilyError("templates folder " + root.string() + " does not exist");
    std::vector<std::filesystem::path> dirs;
    if (std::filesystem::exists(root / "family.json"))
      dirs.push_back(root);
    else
      for (const auto& entry : std::filesystem::directory_iterator(root))
        if (entry.is_directory() && std::filesystem::exists(entry.path() / "family.json"))
          dirs.push_back(entry.path());
    std::sort(dirs.begin(), dirs.end());
    for (const auto& dir : dirs) {
      KernelFamily f = load_family(dir);
      auto same =
          std::find_if(out.begin(), out.end(), [&](const KernelFamily& g) { return g.name == f.name; });
      if (same != out.end())
        *same = std::move(f);
      else
        out.push_back(std::move(f));
    }
  }
  // Templates read from other families' folders first, then "from": a "family" reference copies its
  // target, which must be complete by then.
  for (auto& f : out)
    if (!f.source_from.empty()) resolve_source(f, out);
  for (auto& f : out)
    if (!f.reference.from.empty()) resolve_reference(f, out);
  for (auto& f : out)
    if (f.reference.kind == Reference::Kind::family) resolve_reference(f, out);
  return out;
}

namespace {
std::filesystem::path& builtin_override() {
  static std::filesystem::path dir;
  return dir;
}
}  // namespace

void set_builtin_templates_dir(const std::filesystem::path& directory) { builtin_override() = directory; }

std::filesystem::path builtin_templates_dir() {
  if (const char* env = std::getenv("TILETUNE_TEMPLATES"); env && *env) return env;
  if (!builtin_override().empty()) return builtin_override();
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    for (auto dir = exe.parent_path(); !dir.empty() && dir != dir.root_path(); dir = dir.parent_path()) {
      if (std::filesystem::is_directory(dir / "share/tiletune/kernel_templates"))
        return dir / "share/tiletune/kernel_templates";
      if (std::filesystem::is_directory(dir / "kernel_templates")) return dir / "kernel_templates";
    }
  }
  if (std::filesystem::is_directory(TILETUNE_INSTALL_TEMPLATES, ec)) return TILETUNE_INSTALL_TEMPLATES;
  return TILETUNE_SOURCE_TEMPLATES;
}

const KernelFamily& find_family(const std::vector<KernelFamily>& families, const std::string& name) {
  for (const auto& f : families)
    if (f.name == name) return f;
  std::string known;
  for (const auto& f : families) known += (known.empty() ? "" : ", ") + f.name;
  throw FamilyError("unknown family '" + name + "' (known: " + known + ")");
}

}  // namespace tiletune

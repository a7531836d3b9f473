#include "tiletune/family.hpp"

#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

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

bool is_identifier(const std::string& name) {
  if (name.empty() || !(std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_')) return false;
  for (char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
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
  std::string text(const json& obj, const char* key, const std::string& fallback = "", bool required = true) const {
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
    if (v.is_number_integer()) text = std::to_string(v.get<std::int64_t>());
    else if (v.is_string()) text = v.get<std::string>();
    else fail(where + " must be an expression string or an integer");
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

KernelFamily parse_family(const std::filesystem::path& directory, const std::string& description_text) {
  const std::string file = (directory / "family.json").string();
  Reader r(file);
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
  try {
    f.source = read_text(directory / f.source_file);
  } catch (const FamilyError& e) {
    r.fail(std::string("source: ") + e.what());
  }

  const json& problem = r.need(doc, "problem");
  for (const json& d : r.need(problem, "dims")) {
    if (!d.is_string() || !is_identifier(d.get<std::string>())) r.fail("problem.dims must be identifiers");
    f.dims.push_back(d.get<std::string>());
  }
  if (f.dims.empty()) r.fail("problem.dims is empty");
  if (problem.contains("args")) {
    const json& args = problem.at("args");
    if (!args.is_object()) r.fail("problem.args must be an object of name: default");
    for (const auto& [name, value] : args.items()) {
      if (!value.is_number_integer()) r.fail("problem.args." + name + " must be an integer default");
      f.problem_args.push_back({name, value.get<std::int64_t>()});
    }
  }
  f.problem_checks = r.conditions(problem, "checks");
  if (problem.contains("default_sizes"))
    for (const json& s : problem.at("default_sizes")) {
      if (!s.is_string()) r.fail("problem.default_sizes must be size strings");
      f.default_sizes.push_back(s.get<std::string>());
    }

  const json& params = r.need(doc, "parameters");
  if (!params.is_object() || params.empty()) r.fail("'parameters' must be a non-empty object");
  for (const auto& [name, spec] : params.items()) {
    if (!is_identifier(name)) r.fail("parameter name '" + name + "' must be an identifier");
    Parameter p{name, {}, 0};
    const json& values = r.need(spec, "values");
    if (!values.is_array() || values.empty()) r.fail("parameters." + name + ".values must be a non-empty list");
    std::set<std::int64_t> seen;
    for (const json& v : values) {
      if (!v.is_number_integer()) r.fail("parameters." + name + ".values must be integers");
      if (!seen.insert(v.get<std::int64_t>()).second) r.fail("parameters." + name + " repeats a value");
      p.values.push_back(v.get<std::int64_t>());
    }
    p.default_value = spec.contains("default") ? spec.at("default").get<std::int64_t>() : p.values.front();
    if (!seen.count(p.default_value)) r.fail("parameters." + name + ".default is not one of its values");
    f.parameters.push_back(std::move(p));
  }
  f.constraints = r.conditions(doc, "constraints");

  const json& launch = r.need(doc, "launch");
  for (const char* key : {"block", "grid"}) {
    const json& dims = r.need(launch, key);
    if (!dims.is_array() || dims.empty() || dims.size() > 3) r.fail(std::string("launch.") + key + " needs 1 to 3 expressions");
    for (const json& d : dims) (std::string(key) == "block" ? f.launch.block : f.launch.grid).push_back(r.expr(d, std::string("launch.") + key));
  }
  f.launch.dynamic_shared_bytes = r.expr(launch.value("dynamic_shared_bytes", json("0")), "launch.dynamic_shared_bytes");
  f.launch.static_shared_bytes = r.expr(launch.value("static_shared_bytes", json("0")), "launch.static_shared_bytes");

  std::set<std::string> arg_names;
  for (const json& a : r.need(doc, "arguments")) {
    Argument arg;
    arg.name = r.text(a, "name");
    if (!arg_names.insert(arg.name).second) r.fail("argument '" + arg.name + "' appears twice");
    if (a.contains("buffer")) {
      arg.kind = ArgKind::buffer;
      arg.type = r.text(a, "buffer");
      if (arg.type != "float") r.fail("argument '" + arg.name + "': buffers of type '" + arg.type + "' are not supported (float)");
      arg.count = r.expr(r.need(a, "count"), "argument " + arg.name + " count");
      const std::string role = r.text(a, "role");
      if (role == "input") arg.role = BufferRole::input;
      else if (role == "output") arg.role = BufferRole::output;
      else r.fail("argument '" + arg.name + "': role must be input or output, got '" + role + "'");
    } else if (a.contains("scalar")) {
      arg.kind = ArgKind::scalar;
      arg.type = r.text(a, "scalar");
      if (arg.type != "int" && arg.type != "long") r.fail("argument '" + arg.name + "': scalar type must be int or long");
      arg.value = r.expr(r.need(a, "value"), "argument " + arg.name + " value");
    } else {
      r.fail("argument '" + arg.name + "' must be a buffer or a scalar");
    }
    f.arguments.push_back(std::move(arg));
  }
  if (doc.contains("constants"))
    for (const json& c : doc.at("constants"))
      f.constants.push_back({r.text(c, "name"), r.text(c, "type", "float", false), r.expr(r.need(c, "count"), "constant count")});

  const json& metric = r.need(doc, "metric");
  f.metric_unit = r.text(metric, "unit");
  if (f.metric_unit != "GFLOP/s" && f.metric_unit != "GB/s") r.fail("metric.unit must be GFLOP/s or GB/s");
  f.metric_work = r.expr(r.need(metric, "work"), "metric.work");

  const json& ref = r.need(doc, "reference");
  f.reference.kind = r.text(ref, "kind");
  static const std::set<std::string> known_refs = {"gemm", "conv1d", "conv2d"};
  if (!known_refs.count(f.reference.kind)) r.fail("reference.kind '" + f.reference.kind + "' is not one of gemm, conv1d, conv2d");
  if (ref.contains("tolerance")) f.reference.tolerance = ref.at("tolerance").get<double>();
  if (ref.contains("math")) {
    f.reference.math = r.text(ref, "math");
    if (f.reference.math != "fp32" && f.reference.math != "tf32") r.fail("reference.math '" + f.reference.math + "' is not one of fp32, tf32");
    if (f.reference.kind != "gemm") r.fail("reference.math is for reference.kind gemm");
  }
  if (doc.contains("compile_options"))
    for (const json& o : doc.at("compile_options")) f.compile_options.push_back(o.get<std::string>());
  if (doc.contains("baseline")) {
    const json& b = doc.at("baseline");
    if (b.is_string()) f.baselines.push_back(b.get<std::string>());
    else if (b.is_array())
      for (const json& name : b) {
        if (!name.is_string()) r.fail("'baseline' must be a family name or a list of them");
        f.baselines.push_back(name.get<std::string>());
      }
    else r.fail("'baseline' must be a family name or a list of them");
  }

  // Every expression must only read names the family defines.
  std::set<std::string> known;
  for (const auto& d : f.dims) known.insert(d);
  for (const auto& a : f.problem_args) known.insert(a.name);
  const std::set<std::string> problem_names = known;
  for (const auto& p : f.parameters) {
    if (p.name == kDeviceCcVar) r.fail("parameters." + p.name + ": the name is reserved for the device's compute capability");
    if (p.name == kDeviceSmsVar) r.fail("parameters." + p.name + ": the name is reserved for the device's SM count");
    known.insert(p.name);
  }
  // Constraints and launch expressions may read the device's compute capability and SM count.
  known.insert(kDeviceCcVar);
  known.insert(kDeviceSmsVar);
  auto check_names = [&](const Expr& e, const std::set<std::string>& allowed, const std::string& where) {
    for (const auto& v : e.variables())
      if (!allowed.count(v)) r.fail(where + " reads unknown name '" + v + "' in '" + e.text() + "'");
  };
  for (const auto& c : f.problem_checks) check_names(c.expr, problem_names, "problem.checks");
  for (const auto& c : f.constraints) check_names(c.expr, known, "constraints");
  for (const auto& e : f.launch.block) check_names(e, known, "launch.block");
  for (const auto& e : f.launch.grid) check_names(e, known, "launch.grid");
  check_names(f.launch.dynamic_shared_bytes, known, "launch.dynamic_shared_bytes");
  check_names(f.launch.static_shared_bytes, known, "launch.static_shared_bytes");
  for (const auto& a : f.arguments) check_names(a.kind == ArgKind::buffer ? a.count : a.value, problem_names, "argument " + a.name);
  for (const auto& c : f.constants) check_names(c.count, problem_names, "constant " + c.name);
  check_names(f.metric_work, problem_names, "metric.work");
  // A default problem is "SIZE" or "SIZE name=value,...".
  for (const auto& d : f.default_sizes) {
    try {
      const auto space = d.find(' ');
      if (parse_size_text(d.substr(0, space)).size() != f.dims.size())
        r.fail("default size '" + d + "' does not have " + std::to_string(f.dims.size()) + " dimensions");
      if (space != std::string::npos) parse_args_text(d.substr(space + 1));
    } catch (const std::invalid_argument& e) {
      r.fail(std::string("default size: ") + e.what());
    }
  }
  f.template_hash = content_hash(description_text + '\0' + f.source);
  return f;
}

}  // namespace

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

ProblemKey KernelFamily::make_problem(const std::vector<std::int64_t>& given_dims,
                                      const std::map<std::string, std::int64_t>& given_args) const {
  std::string dim_list;
  for (const auto& d : dims) dim_list += (dim_list.empty() ? "" : "x") + d;
  if (given_dims.size() != dims.size())
    throw FamilyError(name + ": size needs " + std::to_string(dims.size()) + " dimension(s) (" + dim_list + "), got " +
                      std::to_string(given_dims.size()));
  for (auto d : given_dims)
    if (d <= 0) throw FamilyError(name + ": every dimension must be positive");
  ProblemKey key;
  key.dims = given_dims;
  for (const auto& a : problem_args) key.args[a.name] = a.default_value;
  for (const auto& [k, v] : given_args) {
    if (!key.args.count(k)) {
      std::string known;
      for (const auto& a : problem_args) known += (known.empty() ? "" : ", ") + a.name;
      throw FamilyError(name + ": unknown problem argument '" + k + "'" + (known.empty() ? " (it takes none)" : " (it takes " + known + ")"));
    }
    key.args[k] = v;
  }
  const Vars v = vars(key, {});
  for (const auto& c : problem_checks)
    if (!c.expr.eval(v)) throw FamilyError(name + ": problem " + key.size_text() + (key.args.empty() ? "" : " " + key.args_text()) + " is invalid: " + c.message);
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
  if (!std::filesystem::exists(desc)) throw FamilyError(desc.string() + ": no such file");
  return parse_family(directory, read_text(desc));
}

std::vector<KernelFamily> load_families(const std::vector<std::filesystem::path>& roots) {
  std::vector<KernelFamily> out;
  for (const auto& root : roots) {
    if (!std::filesystem::is_directory(root)) throw FamilyError("templates folder " + root.string() + " does not exist");
    std::vector<std::filesystem::path> dirs;
    if (std::filesystem::exists(root / "family.json")) dirs.push_back(root);
    else
      for (const auto& entry : std::filesystem::directory_iterator(root))
        if (entry.is_directory() && std::filesystem::exists(entry.path() / "family.json")) dirs.push_back(entry.path());
    std::sort(dirs.begin(), dirs.end());
    for (const auto& dir : dirs) {
      KernelFamily f = load_family(dir);
      auto same = std::find_if(out.begin(), out.end(), [&](const KernelFamily& g) { return g.name == f.name; });
      if (same != out.end()) *same = std::move(f);
      else out.push_back(std::move(f));
    }
  }
  return out;
}

std::filesystem::path builtin_templates_dir() {
  if (const char* env = std::getenv("TILETUNE_TEMPLATES"); env && *env) return env;
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    for (auto dir = exe.parent_path(); !dir.empty() && dir != dir.root_path(); dir = dir.parent_path()) {
      if (std::filesystem::is_directory(dir / "share/tiletune/kernel_templates")) return dir / "share/tiletune/kernel_templates";
      if (std::filesystem::is_directory(dir / "kernel_templates")) return dir / "kernel_templates";
    }
  }
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

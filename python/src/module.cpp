// The Python extension behind the tiletune package: lookups and stored results as plain records, and the
// runtime's kernels. The package's __init__.py adds the array handling (CuPy, PyTorch) and the streams.
#include <nanobind/nanobind.h>
#include <nanobind/stl/array.h>
#include <nanobind/stl/filesystem.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "tiletune/build_info.hpp"
#include "tiletune/bundle.hpp"
#include "tiletune/client.hpp"
#include "tiletune/family.hpp"
#include "tiletune/result_fields.hpp"
#include "tiletune/runtime.hpp"
#include "tiletune/store.hpp"

namespace nb = nanobind;
using namespace nb::literals;
using namespace tiletune;

namespace {

nb::object optional_value(const std::optional<double>& v) {
  if (!v) return nb::none();
  return nb::float_(*v);
}
nb::object optional_value(const std::optional<int>& v) {
  if (!v) return nb::none();
  return nb::int_(*v);
}

nb::object python_value(const std::optional<double>& v) { return optional_value(v); }
nb::object python_value(const std::optional<int>& v) { return optional_value(v); }
nb::object python_value(const std::string& v) { return nb::str(v.c_str(), v.size()); }

nb::dict params_dict(const Params& params) {
  nb::dict d;
  for (const auto& [name, value] : params) d[name.c_str()] = value;
  return d;
}

ProblemKey problem_of(const std::string& size, const std::string& args) {
  try {
    return ProblemKey{parse_size_text(size), parse_args_text(args)};
  } catch (const std::exception& e) {
    throw runtime::RuntimeError("bad problem '" + size + (args.empty() ? "" : " " + args) + "': " + e.what());
  }
}

Store open_store(const std::filesystem::path& path) {
  try {
    return Store::open(path, Store::Mode::read_only);
  } catch (const std::exception& e) {
    throw runtime::RuntimeError(e.what());
  }
}

nb::dict lookup(const std::filesystem::path& database, const std::string& family, const std::string& device,
                const std::string& arch, const std::string& size, const std::string& args) {
  const ProblemKey problem = problem_of(size, args);
  std::string error;
  const auto client = Client::open(database, &error);
  if (!client) throw runtime::RuntimeError(error);
  const Lookup l = client->best(Query{family, device, arch, problem});
  nb::dict d;
  d["match"] = std::string(to_string(l.match));
  d["params"] = params_dict(l.params);
  d["device"] = l.device_name;
  d["size"] = l.match == Match::not_found ? std::string() : l.problem.size_text();
  d["args"] = l.match == Match::not_found ? std::string() : l.problem.args_text();
  d["median_ms"] = optional_value(l.median_ms);
  d["metric"] = optional_value(l.metric);
  d["metric_unit"] = l.metric_unit;
  d["message"] = l.message;
  return d;
}

// What a sweep's record and each of its results' records say of the sweep.
nb::dict sweep_fields(const SweepInfo& s) {
  nb::dict d;
  d["sweep"] = s.id;
  d["family"] = s.family;
  d["device"] = s.device.name;
  d["arch"] = s.device.arch;
  d["size"] = s.problem.size_text();
  d["args"] = s.problem.args_text();
  return d;
}

nb::dict sweep_dict(const SweepInfo& s) {
  nb::dict d = sweep_fields(s);
  d["kind"] = s.kind;
  d["strategy"] = s.strategy;
  d["status"] = s.status;
  d["started_at"] = s.started_at;
  d["ended_at"] = s.ended_at;
  d["results"] = s.result_count;
  d["template_hash"] = s.template_hash;
  d["tiletune_version"] = s.tiletune_version;
  d["commit"] = s.git_sha;
  return d;
}

nb::list sweeps(const std::filesystem::path& database, const std::string& family, const std::string& device) {
  const Store store = open_store(database);
  nb::list out;
  for (const auto& s : store.sweeps(family, device)) out.append(sweep_dict(s));
  return out;
}

nb::list results(const std::filesystem::path& database, const std::string& family, const std::string& device,
                 std::int64_t sweep_id, std::size_t limit) {
  const Store store = open_store(database);
  std::vector<SweepInfo> chosen;
  if (sweep_id != 0) {
    auto s = store.sweep(sweep_id);
    if (!s) throw runtime::RuntimeError("no sweep " + std::to_string(sweep_id) + " in " + database.string());
    chosen.push_back(std::move(*s));
  } else {
    chosen = store.sweeps(family, device);
  }
  nb::list out;
  for (const auto& s : chosen) {
    if (s.kind != "sweep") continue;
    for (const auto& r : store.results(s.id, limit)) {
      const ResultRecord& rec = r.record;
      nb::dict d = sweep_fields(s);
      d["params"] = params_dict(rec.params);
      d["outcome"] = std::string(to_string(rec.outcome));
      d["reason"] = rec.reason;
      d["repetitions"] = rec.repetitions;
      for (const ResultField& f : result_fields())
        visit_field(f, rec, [&](const auto& value) { d[f.name] = python_value(value); });
      d["measured_at"] = r.measured_at;
      out.append(d);
    }
  }
  return out;
}

nb::list info_list(const std::vector<runtime::BufferInfo>& infos) {
  nb::list out;
  for (const auto& b : infos) {
    nb::dict d;
    d["name"] = b.name;
    d["type"] = b.type;
    d["element_bytes"] = b.element_bytes;
    d["count"] = b.count;
    d["role"] = b.role;
    out.append(d);
  }
  return out;
}

}  // namespace

NB_MODULE(_tiletune, m) {
  m.doc() = "tiletune's native module: lookups, stored results and the runtime (use the tiletune package)";
  static nb::exception<runtime::RuntimeError> error(m, "Error", PyExc_RuntimeError);
  // The store's, the bundle's and the families' errors are tiletune.Error too.
  nb::register_exception_translator(
      [](const std::exception_ptr& p, void* payload) {
        try {
          std::rethrow_exception(p);
        } catch (const StoreError& e) {
          PyErr_SetString(static_cast<PyObject*>(payload), e.what());
        } catch (const BundleError& e) {
          PyErr_SetString(static_cast<PyObject*>(payload), e.what());
        } catch (const FamilyError& e) {
          PyErr_SetString(static_cast<PyObject*>(payload), e.what());
        }
      },
      error.ptr());

  m.def("lookup", &lookup, "database"_a, "family"_a, "device"_a, "arch"_a, "size"_a, "args"_a = "",
        "The best configuration for (family, device, problem) with the client's fallbacks, as a dict.");
  m.def("sweeps", &sweeps, "database"_a, "family"_a = "", "device"_a = "", "The stored sweeps, as dicts.");
  m.def("results", &results, "database"_a, "family"_a = "", "device"_a = "", "sweep"_a = 0, "limit"_a = 0,
        "Every stored result of the sweeps selected, best first within each sweep, as dicts.");
  m.def(
      "set_templates", [](const std::filesystem::path& dir) { set_builtin_templates_dir(dir); },
      "directory"_a,
      "Where the built-in families are (the package's copy), unless TILETUNE_TEMPLATES says otherwise.");
  m.def("version", [] { return std::string(TILETUNE_VERSION); });

  nb::class_<runtime::Kernel>(m, "Kernel")
      .def_prop_ro("family", &runtime::Kernel::family)
      .def_prop_ro("device", &runtime::Kernel::device)
      .def_prop_ro("size", [](const runtime::Kernel& k) { return k.problem().size_text(); })
      .def_prop_ro("args", [](const runtime::Kernel& k) { return k.problem().args_text(); })
      .def_prop_ro("params", [](const runtime::Kernel& k) { return params_dict(k.params()); })
      .def_prop_ro("match", [](const runtime::Kernel& k) { return std::string(to_string(k.match())); })
      .def_prop_ro("message", &runtime::Kernel::message)
      .def_prop_ro("stored_median_ms", &runtime::Kernel::stored_median_ms)
      .def_prop_ro("source", &runtime::Kernel::source)
      .def_prop_ro("compile_ms", &runtime::Kernel::compile_ms)
      .def_prop_ro("load_ms", &runtime::Kernel::load_ms)
      .def_prop_ro("grid", &runtime::Kernel::grid)
      .def_prop_ro("block", &runtime::Kernel::block)
      .def_prop_ro("dynamic_smem", &runtime::Kernel::dynamic_smem)
      .def_prop_ro("constants", &runtime::Kernel::constants)
      .def_prop_ro("constant_info", [](const runtime::Kernel& k) { return info_list(k.constant_info()); })
      .def_prop_ro("buffers", [](const runtime::Kernel& k) { return info_list(k.buffer_info()); })
      .def(
          "_launch",
          [](const runtime::Kernel& k, const std::vector<std::uintptr_t>& pointers, std::uintptr_t stream) {
            std::vector<void*> p(pointers.size());
            for (std::size_t i = 0; i < p.size(); ++i) p[i] = reinterpret_cast<void*>(pointers[i]);
            k.launch(p, reinterpret_cast<cudaStream_t>(stream));
          },
          "pointers"_a, "stream"_a)
      .def(
          "_set_constant",
          [](const runtime::Kernel& k, const std::string& name, nb::bytes data, std::uintptr_t stream) {
            k.set_constant(name, data.c_str(), data.size(), reinterpret_cast<cudaStream_t>(stream));
          },
          "name"_a, "data"_a, "stream"_a = 0);

  nb::class_<runtime::Runtime>(m, "Runtime")
      .def(
          "__init__",
          [](runtime::Runtime* self, const std::filesystem::path& database,
             const std::vector<std::filesystem::path>& families, const std::filesystem::path& cache,
             const std::filesystem::path& bundle, const std::filesystem::path& capture, bool capture_inputs) {
            runtime::RuntimeOptions o;
            o.database = database;
            o.family_roots = families;
            o.cache = cache;
            o.bundle = bundle;
            o.capture = capture;
            o.capture_inputs = capture_inputs;
            new (self) runtime::Runtime(o);
          },
          "database"_a = "tiletune.db", "families"_a = std::vector<std::filesystem::path>{},
          "cache"_a = std::filesystem::path(), "bundle"_a = std::filesystem::path(),
          "capture"_a = std::filesystem::path(), "capture_inputs"_a = false)
      .def("kernel", &runtime::Runtime::kernel, "family"_a, "size"_a, "args"_a = "",
           nb::rv_policy::reference_internal, nb::call_guard<nb::gil_scoped_release>());
}

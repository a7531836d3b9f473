#include "tiletune/runtime.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <utility>

#include "tiletune/bundle_manifest.hpp"
#include "tiletune/capture.hpp"
#include "tiletune/compiler.hpp"
#include "tiletune/device.hpp"
#include "tiletune/family.hpp"
#include "tiletune/input_file.hpp"
#include "tiletune/kernel_spec.hpp"
#include "tiletune/loaded_kernel.hpp"
#include "tiletune/plan.hpp"
#include "tiletune/tensor_map.hpp"
#include "tiletune/utf8.hpp"

namespace tiletune::runtime {

namespace {

void check(cudaError_t e, const std::string& what) {
  if (e != cudaSuccess) {
    cudaGetLastError();  // a launch error is not sticky: clear it for the caller's next call
    throw RuntimeError(what + ": " + cudaGetErrorName(e) + ": " + cudaGetErrorString(e));
  }
}

// A __constant__ symbol of the kernel's module.
void* global(const LoadedKernel& kernel, const std::string& name, std::size_t* bytes,
             const std::string& what) {
  try {
    return kernel.module().global(name, bytes);
  } catch (const LaunchError& e) {
    cudaGetLastError();
    throw RuntimeError(what + ": " + e.what());
  }
}

wire::KernelSpec launch_spec(const KernelFamily& family, const ProblemKey& problem, const Params& params,
                             const LaunchGeometry& launch, const std::string& config) {
  try {
    return kernel_spec(family, problem, params, launch);
  } catch (const LaunchSpecError& e) {
    throw RuntimeError(config + ": " + e.what());
  }
}

// The current CUDA device's limits, read once per device.
const DeviceLimits& current_device(std::map<int, DeviceLimits>& known) {
  int ordinal = -1;
  if (cudaGetDevice(&ordinal) != cudaSuccess) {
    cudaGetLastError();
    ordinal = 0;
  }
  if (const auto it = known.find(ordinal); it != known.end()) return it->second;
  std::string why;
  for (auto& d : present_devices(&why))
    if (d.ordinal == ordinal) return known.emplace(ordinal, std::move(d)).first->second;
  throw RuntimeError(why.empty() ? "no CUDA GPU " + std::to_string(ordinal) : why);
}

}  // namespace

struct Kernel::TensorMaps {
  // How many pointers' maps each tensor map keeps (a caching allocator hands out a few buffers in turn).
  static constexpr std::size_t kKept = 8;
  struct Map {
    wire::TensorMapSpec spec;
    std::size_t buffer = 0;                                         // its buffer's place in buffers()
    std::vector<std::pair<const void*, EncodedTensorMap>> encoded;  // the latest pointer first
  };
  std::vector<Map> maps;
  std::mutex mutex;

  // Map `index` over `pointer`, encoded once per pointer while it stays among the latest kKept.
  EncodedTensorMap over(std::size_t index, const void* pointer, const std::string& family) {
    std::lock_guard<std::mutex> lock(mutex);
    Map& m = maps[index];
    const auto found =
        std::find_if(m.encoded.begin(), m.encoded.end(), [&](const auto& e) { return e.first == pointer; });
    if (found != m.encoded.end()) {
      std::rotate(m.encoded.begin(), found, found + 1);
      return m.encoded.front().second;
    }
    EncodedTensorMap map;
    const std::string error = encode_tensor_map(m.spec, pointer, map);
    if (!error.empty()) throw RuntimeError(family + ": " + error);
    if (m.encoded.size() == kKept) m.encoded.pop_back();
    m.encoded.insert(m.encoded.begin(), {pointer, map});
    return map;
  }
};

struct Kernel::PendingCapture {
  CaptureWriter* writer = nullptr;
  CapturedProblem problem;
  std::once_flag once;
  bool done = false;
};

Kernel::~Kernel() {
  // A problem asked for and never launched is still recorded, without inputs.
  if (pending_capture_ && !pending_capture_->done) {
    try {
      pending_capture_->writer->record(pending_capture_->problem);
    } catch (const CaptureError&) {  // a destructor has no one to tell
    }
  }
}

namespace {

// `bytes` bytes of device memory, copied to the host once what is queued on `stream` has run.
std::vector<char> copy_to_host(const void* device, std::size_t bytes, cudaStream_t stream,
                               const std::string& what) {
  std::vector<char> host(bytes);
  check(cudaStreamSynchronize(stream), what);
  check(cudaMemcpy(host.data(), device, bytes, cudaMemcpyDeviceToHost), what);
  return host;
}

// Saves one input under `dir` (relative to the capture file's folder) and names it in the capture line.
void save_input(const BufferInfo& b, const std::vector<char>& host, const std::filesystem::path& folder,
                const std::filesystem::path& dir, CapturedProblem& line) {
  const auto type = element_type_from_string(b.type);
  if (!type)
    throw RuntimeError("capture: buffer '" + b.name + "' has type " + b.type + ", which is not saved");
  const std::filesystem::path file = dir / (b.name + input_file_extension(*type));
  try {
    write_input_file(folder / file, *type, host.data(), b.count);
  } catch (const InputFileError& e) {
    throw RuntimeError(std::string("capture: ") + e.what());
  }
  line.inputs[b.name] = file.generic_string();
}

}  // namespace

// The first launch of a newly captured problem: its inputs as given (before the kernel writes the inout ones)
// go to .npy files beside the capture file, then its line, naming them.
void Kernel::save_capture(const std::vector<void*>& buffers, cudaStream_t stream) const {
  PendingCapture& pending = *pending_capture_;
  CapturedProblem line = pending.problem;
  const std::filesystem::path folder = pending.writer->path().parent_path();
  const std::filesystem::path dir = capture_inputs_dir(pending.writer->path(), line);
  std::error_code ec;
  std::filesystem::create_directories(folder / dir, ec);
  if (ec)
    throw RuntimeError("capture: " + (folder / dir).string() + ": cannot create (" + ec.message() + ")");
  for (std::size_t i = 0; i < buffer_info_.size(); ++i) {
    const BufferInfo& b = buffer_info_[i];
    if (b.role == "output") continue;
    save_input(b,
               copy_to_host(buffers[i], b.count * b.element_bytes, stream, family_ + ": capture " + b.name),
               folder, dir, line);
  }
  for (const BufferInfo& c : constant_info_) {
    void* symbol = nullptr;
    std::size_t size = 0;
    symbol = global(*loaded_, c.name, &size, family_ + ": constant " + c.name);
    const std::size_t bytes = std::min<std::size_t>(size, c.count * c.element_bytes);
    BufferInfo whole = c;
    whole.count = bytes / c.element_bytes;
    save_input(whole, copy_to_host(symbol, bytes, stream, family_ + ": capture " + c.name), folder, dir,
               line);
  }
  try {
    pending.writer->record(line);
  } catch (const CaptureError& e) {
    throw RuntimeError(e.what());
  }
  pending.done = true;
}

void Kernel::launch(const std::vector<void*>& buffers, cudaStream_t stream) const {
  if (buffers.size() != buffer_names_.size())
    throw RuntimeError(family_ + ": " + std::to_string(buffers.size()) + " buffers given, the kernel takes " +
                       std::to_string(buffer_names_.size()));
  int current = -1;
  if (cudaGetDevice(&current) != cudaSuccess || current != device_) {
    cudaGetLastError();
    throw RuntimeError(family_ + ": loaded on GPU " + std::to_string(device_) +
                       ", and the current device is " +
                       (current < 0 ? std::string("unknown") : "GPU " + std::to_string(current)) +
                       ": make it current (cudaSetDevice) or ask the runtime for this GPU's kernel");
  }
  if (pending_capture_) std::call_once(pending_capture_->once, [&] { save_capture(buffers, stream); });
  std::vector<std::uint64_t> storage(args_.size());
  std::vector<EncodedTensorMap> maps(tensor_maps_ ? tensor_maps_->maps.size() : 0);
  std::vector<void*> slots(args_.size());
  std::size_t next = 0;
  for (std::size_t i = 0; i < args_.size(); ++i) {
    if (args_[i].tensor_map >= 0) {
      const auto index = static_cast<std::size_t>(args_[i].tensor_map);
      const auto& map = tensor_maps_->maps[index];
      if (buffers[map.buffer] == nullptr)
        throw RuntimeError(family_ + ": no device pointer for buffer '" + map.spec.buffer + "'");
      maps[index] = tensor_maps_->over(index, buffers[map.buffer], family_);
      slots[i] = &maps[index];
      continue;
    }
    if (args_[i].buffer.empty()) {
      storage[i] = args_[i].bits;
    } else {
      void* pointer = buffers[next++];
      if (pointer == nullptr)
        throw RuntimeError(family_ + ": no device pointer for buffer '" + args_[i].buffer + "'");
      std::memcpy(&storage[i], &pointer, sizeof pointer);
    }
    slots[i] = &storage[i];
  }
  check(loaded_->launch(slots.data(), stream), family_ + ": launch");
}

void Kernel::launch(const std::map<std::string, void*>& buffers, cudaStream_t stream) const {
  std::vector<void*> ordered;
  for (const auto& name : buffer_names_) {
    const auto it = buffers.find(name);
    if (it == buffers.end() || it->second == nullptr)
      throw RuntimeError(family_ + ": no device pointer for buffer '" + name + "'");
    ordered.push_back(it->second);
  }
  launch(ordered, stream);
}

void Kernel::set_constant(const std::string& name, const void* data, std::size_t bytes,
                          cudaStream_t stream) const {
  if (std::find(constant_names_.begin(), constant_names_.end(), name) == constant_names_.end())
    throw RuntimeError(family_ + " declares no constant '" + name + "'");
  void* symbol = nullptr;
  std::size_t size = 0;
  symbol = global(*loaded_, name, &size, family_ + ": constant " + name);
  if (bytes > size)
    throw RuntimeError(family_ + ": __constant__ " + name + " holds " + std::to_string(size) +
                       " bytes, not " + std::to_string(bytes));
  check(cudaMemcpyAsync(symbol, data, bytes, cudaMemcpyHostToDevice, stream), family_ + ": constant " + name);
}

namespace {

// The template hash of `family` filled from the inputs the capture file saved for this problem, which is the
// one `sweep --captured` tuned it on; empty where none were saved or they cannot be read now.
std::string captured_template_hash(const CaptureWriter* capture, const KernelFamily& family,
                                   const std::string& device, const ProblemKey& problem) {
  if (!capture) return {};
  try {
    for (const auto& p : read_capture(capture->path())) {
      if (p.inputs.empty() || p.family != family.name || p.device != device ||
          p.size != problem.size_text() || p.args != problem.args_text())
        continue;
      KernelFamily copy = family;
      for (const auto& [name, file] : p.inputs)
        use_input_file(copy, name, capture->path().parent_path() / file);
      return copy.template_hash;
    }
  } catch (const std::exception&) {  // no capture file yet, or its inputs are gone: no such results then
  }
  return {};
}

// A configuration tuned on another template is not the kernel that was measured: the fastest one measured on
// the template as it is now serves, and where there is none the family is refused.
void serve_current_template(const Client& client, const CaptureWriter* capture, const KernelFamily& family,
                            const DeviceLimits& device, Lookup& lookup) {
  if (lookup.template_hash == family.template_hash ||
      lookup.template_hash == captured_template_hash(capture, family, device.name, lookup.problem))
    return;
  std::string error;
  const auto current =
      client.best_on_template(family.name, lookup.device_name, lookup.problem, family.template_hash, &error);
  if (!error.empty()) throw RuntimeError(error);
  if (!current)
    throw RuntimeError(family.name + " changed since it was tuned (template hash " + lookup.template_hash +
                       " in sweep " + std::to_string(lookup.sweep_id) + ", now " + family.template_hash +
                       "): sweep it again");
  lookup.params = current->params;
  lookup.median_ms = current->median_ms;
  lookup.metric = current->metric;
  lookup.template_hash = current->template_hash;
  lookup.message +=
      " (the fastest on the template as it is now, sweep " + std::to_string(current->sweep_id) + ")";
  lookup.sweep_id = current->sweep_id;
}

ProblemKey runtime_problem(const KernelFamily& family, const std::string& size, const std::string& args) {
  try {
    return family.make_problem(parse_size_text(size), parse_args_text(args));
  } catch (const std::exception& e) {
    throw RuntimeError(family.name + ": " + first_line(e.what()));
  }
}

// The configuration's CUBIN, through the compile cache.
CompileResult compile(const std::filesystem::path& cache_dir, const KernelFamily& family,
                      const DeviceLimits& device, const Params& params, const std::string& config) {
  const CompileCache cache(cache_dir.empty() ? CompileCache::default_dir() : cache_dir);
  const CompileJob job = compile_job(family, device, params);
  CompileResult compiled = cache.load_or_compile(cache.key(job), job);
  if (const auto* error = std::get_if<CompileError>(&compiled))
    throw RuntimeError(config + " does not compile: " + first_line(error->log));
  return compiled;
}

}  // namespace

struct Runtime::State {
  RuntimeOptions options;
  std::mutex mutex;
  std::optional<std::vector<KernelFamily>> families;
  std::optional<Client> client;
  std::optional<Bundle> bundle;
  std::unique_ptr<CaptureWriter> capture;  // null: capture is off (before the kernels, which may record)
  bool capture_inputs = false;
  std::map<std::string, std::unique_ptr<Kernel>> kernels;  // by device, family and problem
  std::map<int, DeviceLimits> devices;                     // by ordinal

  // The family, from the bundle's families/ or the built-in and the caller's folders (loaded once).
  const KernelFamily& family(const std::string& name);
  // The bundle's configuration for the problem, its CUBIN, and how it matched in `lookup`.
  CompileResult from_bundle(const KernelFamily& family, const DeviceLimits& device, const ProblemKey& problem,
                            Lookup& lookup) const;
  // The database's best configuration, measured on the family's template as it is now.
  Lookup lookup(const KernelFamily& family, const DeviceLimits& device, const ProblemKey& problem);
};

const KernelFamily& Runtime::State::family(const std::string& name) {
  const bool bundled = !options.bundle.empty();
  if (bundled && !bundle) {
    try {
      bundle = read_bundle(options.bundle);
    } catch (const BundleError& e) {
      throw RuntimeError(e.what());
    }
  }
  if (!families) {
    std::vector<std::filesystem::path> roots;
    if (bundled) {
      roots = {bundle->families_dir()};
    } else {
      roots = {builtin_templates_dir()};
      roots.insert(roots.end(), options.family_roots.begin(), options.family_roots.end());
    }
    try {
      families = load_families(roots);
    } catch (const std::exception& e) {
      throw RuntimeError(first_line(e.what()));
    }
  }
  try {
    return find_family(*families, name);
  } catch (const FamilyError& e) {
    throw RuntimeError(bundled ? "bundle " + options.bundle.string() + ": " + e.what() : e.what());
  }
}

CompileResult Runtime::State::from_bundle(const KernelFamily& family, const DeviceLimits& device,
                                          const ProblemKey& problem, Lookup& l) const {
  const std::string where = "bundle " + options.bundle.string();
  Match match = Match::not_found;
  const BundleEntry* entry = bundle->find(family.name, device.name, device.arch(), problem, &match);
  if (!entry)
    throw RuntimeError(where + " holds no configuration of " + family.name + " for " + device.arch() + " (" +
                       device.name + ")");
  if (entry->template_hash != family.template_hash)
    throw RuntimeError(where + ": " + family.name +
                       " in its families/ differs from the one tuned (template hash " + entry->template_hash +
                       ", now " + family.template_hash + "): export the bundle again");
  l.match = match;
  l.params = entry->params;
  l.device_name = entry->device_name;
  l.problem = entry->problem;
  l.median_ms = entry->median_ms;
  l.metric = entry->metric;
  l.metric_unit = entry->metric_unit;
  l.template_hash = entry->template_hash;
  l.sweep_id = entry->sweep_id;
  const std::string tuned = entry->problem.args.empty()
                                ? entry->problem.size_text()
                                : entry->problem.size_text() + " (" + entry->problem.args_text() + ")";
  l.message = std::string(to_string(match)) + ": the bundle's configuration tuned on " + entry->device_name +
              " for " + tuned;
  CompiledKernel cubin;
  try {
    cubin.cubin = bundle->cubin(*entry);
  } catch (const BundleError& e) {
    throw RuntimeError(e.what());
  }
  cubin.lowered_name = entry->symbol;
  cubin.usage = entry->usage;
  return cubin;
}

Lookup Runtime::State::lookup(const KernelFamily& family, const DeviceLimits& device,
                              const ProblemKey& problem) {
  if (!client) {
    std::string error;
    client = Client::open(options.database, &error);
    if (!client) throw RuntimeError(error);
  }
  Lookup l = client->best(Query{family.name, device.name, device.arch(), problem}, family.default_params());
  if (l.match != Match::not_found) serve_current_template(*client, capture.get(), family, device, l);
  return l;
}

Runtime::Runtime(RuntimeOptions options) : state_(std::make_unique<State>()) {
  state_->options = std::move(options);
  const auto path = capture_path(state_->options.capture, state_->options.database);
  if (!path.empty()) state_->capture = std::make_unique<CaptureWriter>(path);
  state_->capture_inputs = capture_inputs_enabled(state_->options.capture_inputs);
}

// A problem served without an exact match goes to the capture file, once; with its inputs, its line waits for
// the first launch.
void Runtime::record_capture(Kernel& k, const std::string& family, const DeviceLimits& device,
                             const ProblemKey& problem) {
  CaptureWriter* capture = state_->capture.get();
  if (!capture || k.match() == Match::exact) return;
  try {
    CapturedProblem line{family,
                         device.name,
                         device.arch(),
                         problem.size_text(),
                         problem.args_text(),
                         std::string(to_string(k.match())),
                         params_to_text(k.params()),
                         0,
                         {}};
    if (!state_->capture_inputs || capture->contains(line)) {
      capture->record(line);
      return;
    }
    k.pending_capture_ = std::make_unique<Kernel::PendingCapture>();
    k.pending_capture_->writer = capture;
    k.pending_capture_->problem = std::move(line);
  } catch (const CaptureError& e) {
    throw RuntimeError(e.what());
  }
}

Runtime::~Runtime() = default;

const Kernel& Runtime::kernel(const std::string& family_name, const std::string& size,
                              const std::string& args) {
  State& st = *state_;
  std::lock_guard<std::mutex> lock(st.mutex);
  const auto t0 = std::chrono::steady_clock::now();
  const KernelFamily& family = st.family(family_name);
  const ProblemKey problem = runtime_problem(family, size, args);
  const DeviceLimits& device = current_device(st.devices);
  const std::string key = std::to_string(device.ordinal) + "/" + device.uuid + "/" + family_name + "/" +
                          problem.size_text() + "/" + problem.args_text();
  if (const auto it = st.kernels.find(key); it != st.kernels.end()) return *it->second;

  std::unique_ptr<Kernel> k(new Kernel());
  k->family_ = family_name;
  k->problem_ = problem;
  k->device_ = device.ordinal;
  std::optional<CompileResult> compiled;
  if (st.bundle) {
    compiled = st.from_bundle(family, device, problem, k->lookup_);
    k->source_ = "bundle";
  } else {
    k->lookup_ = st.lookup(family, device, problem);
  }
  record_capture(*k, family_name, device, problem);
  const Params& params = k->lookup_.params;
  const std::string config = family_name + " " + params_to_text(params);

  PlannedConfig c = prune_before_compile(family, device, problem, params);
  if (c.outcome != Outcome::ok)
    throw RuntimeError(config + " cannot run on " + device.name + " at " + problem.size_text() + ": " +
                       first_line(c.reason));
  if (!compiled) {
    compiled = compile(st.options.cache, family, device, params, config);
    k->source_ = std::get<CompiledKernel>(*compiled).from_cache ? "cache" : "compiled";
  }
  const auto& cubin = std::get<CompiledKernel>(*compiled);
  k->compile_ms_ = k->source_ == "bundle" ? 0.0 : cubin.compile_ms;
  apply_compile_result(c, *compiled, device);
  if (c.outcome != Outcome::ok)
    throw RuntimeError(config + " cannot run on " + device.name + ": " + first_line(c.reason));
  k->load(family, cubin.cubin, launch_spec(family, problem, params, c.launch, config), config);
  k->load_ms_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return *st.kernels.emplace(key, std::move(k)).first->second;
}

void Kernel::load(const KernelFamily& family, const std::string& cubin, const wire::KernelSpec& spec,
                  const std::string& config) {
  try {
    loaded_ = std::make_unique<LoadedKernel>(cubin, spec);
  } catch (const LaunchError& e) {
    cudaGetLastError();
    throw RuntimeError(config + ": " + e.what());
  }
  kernel_ = loaded_->kernel();
  for (int d = 0; d < 3; ++d) {
    grid_[d] = static_cast<unsigned>(spec.grid[d]);
    block_[d] = static_cast<unsigned>(spec.block[d]);
    cluster_[d] = static_cast<unsigned>(spec.cluster[d]);
  }
  dynamic_smem_ = static_cast<std::size_t>(spec.dynamic_smem);
  for (const auto& a : spec.args)
    if (!a.buffer.empty()) buffer_names_.push_back(a.buffer);
  for (const auto& a : spec.args) {
    Arg arg{a.buffer, a.buffer.empty() && !a.is_tensor_map() ? wire::scalar_bits(a) : 0};
    if (a.is_tensor_map()) {
      // Encoded at launch, over the caller's pointer of its buffer.
      const auto buffer = std::find(buffer_names_.begin(), buffer_names_.end(), a.tensor_map.buffer);
      if (buffer == buffer_names_.end())
        throw RuntimeError(config + ": tensor map " + a.tensor_map.name +
                           " describes no buffer of the kernel");
      if (!tensor_maps_) tensor_maps_ = std::make_unique<TensorMaps>();
      arg.tensor_map = static_cast<int>(tensor_maps_->maps.size());
      tensor_maps_->maps.push_back(
          {a.tensor_map, static_cast<std::size_t>(buffer - buffer_names_.begin()), {}});
    }
    args_.push_back(std::move(arg));
  }
  constant_names_ = spec.constants;
  describe_buffers(family, config);
}

// Sizes as the worker allocates them for this problem.
void Kernel::describe_buffers(const KernelFamily& family, const std::string& config) {
  const Vars vars = family.vars(problem_, {});
  const auto info = [&](const std::string& what, const std::string& name, ElementType type,
                        const Expr& count) {
    BufferInfo i;
    i.name = name;
    i.type = to_string(type);
    i.element_bytes = size_of(type);
    try {
      i.count = static_cast<std::uint64_t>(std::max<std::int64_t>(0, count.eval(vars)));
    } catch (const std::exception& e) {
      throw RuntimeError(config + ": " + what + " " + name + ": " + first_line(e.what()));
    }
    return i;
  };
  for (const auto& name : buffer_names_)
    if (const Argument* a = find_argument(family, name)) {
      buffer_info_.push_back(info("buffer", name, a->type, a->count));
      buffer_info_.back().role = to_string(a->role);
    }
  for (const auto& c : family.constants) constant_info_.push_back(info("constant", c.name, c.type, c.count));
}

}  // namespace tiletune::runtime

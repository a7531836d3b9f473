#include "tiletune/compiler.hpp"

#include <cuda_runtime_api.h>
#include <nvrtc.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <thread>

#include "tiletune/dynamic_library.hpp"
#include "tiletune/family.hpp"

extern char** environ;  // the environment the compiler processes inherit

namespace tiletune {

using nlohmann::json;

namespace {

// The compile cache's entry format: part of every key. 2: entries carry the lowered name and NVRTC's time.
constexpr const char* kCacheFormat = "tiletune-cache-2";

// NVRTC, opened when something is first compiled rather than linked: a program that only loads CUBINs (an
// application running a bundle) runs where NVRTC is not installed. TILETUNE_NVRTC names the library to open;
// otherwise the loader's search path, then the toolkit this was built with.
struct Nvrtc {
  decltype(&::nvrtcVersion) version = nullptr;
  decltype(&::nvrtcGetErrorString) error_string = nullptr;
  decltype(&::nvrtcCreateProgram) create = nullptr;
  decltype(&::nvrtcDestroyProgram) destroy = nullptr;
  decltype(&::nvrtcAddNameExpression) add_name = nullptr;
  decltype(&::nvrtcCompileProgram) compile = nullptr;
  decltype(&::nvrtcGetProgramLogSize) log_size = nullptr;
  decltype(&::nvrtcGetProgramLog) log = nullptr;
  decltype(&::nvrtcGetCUBINSize) cubin_size = nullptr;
  decltype(&::nvrtcGetCUBIN) cubin = nullptr;
  decltype(&::nvrtcGetLoweredName) lowered_name = nullptr;
  std::string error;  // why it could not be opened; empty when it was
};

const Nvrtc& nvrtc() {
  static const Nvrtc api = [] {
    Nvrtc n;
    std::vector<std::string> names;
    if (const char* env = std::getenv("TILETUNE_NVRTC"); env && *env) {
      names.push_back(env);
    } else {
      const std::string so = "libnvrtc.so." + std::to_string(CUDART_VERSION / 1000);
      names = {so, std::string(TILETUNE_CUDA_LIBRARY_DIR) + "/" + so, "/usr/local/cuda/lib64/" + so};
    }
    static const DynamicLibrary lib(names);
    if (!lib.ok()) {
      n.error = "NVRTC cannot be opened (" + lib.error() +
                "): install the CUDA toolkit's NVRTC or name the library in TILETUNE_NVRTC";
      return n;
    }
    const auto get = [&](auto& fn, const char* symbol) {
      if (!lib.get(fn, symbol) && n.error.empty()) n.error = std::string("NVRTC lacks ") + symbol;
    };
    get(n.version, "nvrtcVersion");
    get(n.error_string, "nvrtcGetErrorString");
    get(n.create, "nvrtcCreateProgram");
    get(n.destroy, "nvrtcDestroyProgram");
    get(n.add_name, "nvrtcAddNameExpression");
    get(n.compile, "nvrtcCompileProgram");
    get(n.log_size, "nvrtcGetProgramLogSize");
    get(n.log, "nvrtcGetProgramLog");
    get(n.cubin_size, "nvrtcGetCUBINSize");
    get(n.cubin, "nvrtcGetCUBIN");
    get(n.lowered_name, "nvrtcGetLoweredName");
    return n;
  }();
  return api;
}

// Owns one nvrtcProgram.
class Program {
 public:
  explicit Program(nvrtcProgram p) : p_(p) {}
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;
  ~Program() {
    if (p_) nvrtc().destroy(&p_);
  }
  nvrtcProgram get() const { return p_; }

 private:
  nvrtcProgram p_ = nullptr;
};

#define TILETUNE_NVRTC_CHECK(call)                                                          \
  do {                                                                                      \
    const nvrtcResult nvrtc_status_ = (call);                                               \
    if (nvrtc_status_ != NVRTC_SUCCESS)                                                     \
      return CompileError{std::string(#call) + ": " + nvrtc().error_string(nvrtc_status_) + \
                          " (" __FILE__ ":" + std::to_string(__LINE__) + ")"};              \
  } while (0)

std::string program_log(nvrtcProgram p) {
  std::size_t size = 0;
  if (nvrtc().log_size(p, &size) != NVRTC_SUCCESS || size == 0) return {};
  std::string log(size, '\0');
  if (nvrtc().log(p, log.data()) != NVRTC_SUCCESS) return {};
  log = readable_log(std::move(log));
  while (!log.empty() && log.back() == '\n') log.pop_back();
  return log;
}

std::string read_file(const std::filesystem::path& path, bool* ok) {
  std::ifstream in(path, std::ios::binary);
  *ok = static_cast<bool>(in);
  std::ostringstream out;
  if (in) out << in.rdbuf();
  return out.str();
}

bool write_atomic(const std::filesystem::path& path, const std::string& bytes) {
  const auto tmp = path.string() + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return false;
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out) return false;
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  return !ec;
}

}  // namespace

std::string nvrtc_version() {
  int major = 0, minor = 0;
  if (!nvrtc().version || nvrtc().version(&major, &minor) != NVRTC_SUCCESS) return "none";
  return std::to_string(major) + "." + std::to_string(minor);
}

bool nvrtc_has_own_cache() {
  int major = 0, minor = 0;
  if (!nvrtc().version || nvrtc().version(&major, &minor) != NVRTC_SUCCESS) return false;
  return major > 12 || (major == 12 && minor >= 9);
}

const std::string& nvrtc_unavailable() { return nvrtc().error; }

std::string readable_log(std::string log) {
  // NVRTC joins its own log and ptxas's with NUL bytes (a log may start with one): whatever reads the log as
  // a C string would see nothing past the first, so each becomes a line break.
  std::replace(log.begin(), log.end(), '\0', '\n');
  log.erase(0, std::min(log.find_first_not_of('\n'), log.size()));
  return log;
}

ResourceUsage parse_ptxas_usage(const std::string& log, const std::string& kernel) {
  ResourceUsage u;
  const std::string marker = "Compiling entry function '" + kernel + "'";
  const std::size_t start = log.find(marker);
  if (kernel.empty() || start == std::string::npos) return u;
  std::size_t end = log.find("Compiling entry function", start + marker.size());
  const std::string part = log.substr(start, end == std::string::npos ? std::string::npos : end - start);
  std::smatch m;
  static const std::regex regs(R"(Used (\d+) registers)"), smem(R"((\d+) bytes smem)"),
      stack(R"((\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads)"),
      barriers(R"(used (\d+) barriers)");
  if (std::regex_search(part, m, regs)) u.registers = std::stoi(m[1]);
  if (std::regex_search(part, m, smem)) u.static_smem = std::stoi(m[1]);
  if (std::regex_search(part, m, stack)) {
    u.stack_bytes = std::stoi(m[1]);
    u.spill_stores = std::stoi(m[2]);
    u.spill_loads = std::stoi(m[3]);
  }
  if (std::regex_search(part, m, barriers)) u.barriers = std::stoi(m[1]);
  return u;
}

namespace {

// Where NVRTC finds the toolkit's headers (cuda_fp16.h, cuda_bf16.h, ...): found once per process.
const std::string& cuda_include_dir() {
  static const std::string dir = [] {
    std::vector<std::string> candidates;
    for (const char* env : {"TILETUNE_CUDA_INCLUDE", "CUDA_HOME", "CUDA_PATH"})
      if (const char* v = std::getenv(env); v && *v)
        candidates.push_back(std::string(v) +
                             (std::string(env) == "TILETUNE_CUDA_INCLUDE" ? "" : "/include"));
    candidates.push_back(TILETUNE_CUDA_INCLUDE_DIR);
    candidates.push_back("/usr/local/cuda/include");
    for (const auto& c : candidates) {
      std::error_code ec;
      if (std::filesystem::exists(std::filesystem::path(c) / "cuda_fp16.h", ec)) return c;
    }
    return std::string();
  }();
  return dir;
}

}  // namespace

CompileResult compile(const CompileJob& job) {
  const auto t0 = std::chrono::steady_clock::now();
  if (!nvrtc().error.empty()) return CompileError{nvrtc().error};
  nvrtcProgram raw = nullptr;
  TILETUNE_NVRTC_CHECK(nvrtc().create(&raw, job.source.c_str(), job.file_name.c_str(), 0, nullptr, nullptr));
  Program program(raw);
  // A C++ kernel's symbol is mangled: NVRTC lowers the name as a name expression (an extern "C" kernel's
  // lowered name is its own), and a name that the source does not define fails the compile with a log.
  if (!job.kernel.empty()) TILETUNE_NVRTC_CHECK(nvrtc().add_name(program.get(), job.kernel.c_str()));
  std::vector<std::string> options = {"--gpu-architecture=" + job.arch, "--ptxas-options=-v", "--std=c++17"};
  // NVRTC 12.9 and later keep their own on-disk cache, and a result served from it carries no ptxas report
  // (no registers, no spills). tiletune caches compiled kernels itself, so NVRTC's cache stays off.
  if (nvrtc_has_own_cache()) options.push_back("--no-cache");
  if (!cuda_include_dir().empty()) options.push_back("--include-path=" + cuda_include_dir());
  options.insert(options.end(), job.options.begin(), job.options.end());
  std::vector<const char*> argv;
  for (const auto& o : options) argv.push_back(o.c_str());
  const nvrtcResult status = nvrtc().compile(program.get(), static_cast<int>(argv.size()), argv.data());
  std::string log = program_log(program.get());
  if (status != NVRTC_SUCCESS)
    return CompileError{log.empty() ? std::string(nvrtc().error_string(status)) : log};
  std::size_t size = 0;
  TILETUNE_NVRTC_CHECK(nvrtc().cubin_size(program.get(), &size));
  CompiledKernel out;
  out.cubin.resize(size);
  TILETUNE_NVRTC_CHECK(nvrtc().cubin(program.get(), out.cubin.data()));
  if (!job.kernel.empty()) {
    const char* lowered = nullptr;
    TILETUNE_NVRTC_CHECK(nvrtc().lowered_name(program.get(), job.kernel.c_str(), &lowered));
    out.lowered_name = lowered ? lowered : job.kernel;
  }
  out.usage = parse_ptxas_usage(log, out.lowered_name);
  out.log = std::move(log);
  out.compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

CompileCache::CompileCache(std::filesystem::path dir) : dir_(std::move(dir)) {
  if (dir_.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (ec || access(dir_.c_str(), W_OK) != 0) {
    std::cerr << "tiletune: warning: compile cache " << dir_.string()
              << " is not writable; compiling without it\n";
    dir_.clear();
  }
}

std::filesystem::path CompileCache::default_dir() {
  if (const char* env = std::getenv("TILETUNE_CACHE"); env && *env) return env;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    return std::filesystem::path(xdg) / "tiletune";
  if (const char* home = std::getenv("HOME"); home && *home)
    return std::filesystem::path(home) / ".cache/tiletune";
  return std::filesystem::temp_directory_path() / "tiletune-cache";
}

std::string CompileCache::key(const CompileJob& job) const {
  // The entry format's version leads, so that entries from before a format change are never found.
  std::string text = std::string(kCacheFormat) + '\0' + job.source + '\0' + job.file_name + '\0' +
                     job.kernel + '\0' + job.arch + '\0' + nvrtc_version();
  for (const auto& o : job.options) text += '\0' + o;
  return content_hash(text) + content_hash("tiletune-salt" + text);
}

std::optional<CompileResult> CompileCache::load(const std::string& key) const {
  if (!enabled()) return std::nullopt;
  bool ok = false;
  const std::string meta_text = read_file(dir_ / (key + ".json"), &ok);
  if (!ok) return std::nullopt;
  try {
    const json meta = json::parse(meta_text);
    if (!meta.at("ok").get<bool>()) return CompileResult{CompileError{meta.at("log").get<std::string>()}};
    CompiledKernel k;
    k.cubin = read_file(dir_ / (key + ".cubin"), &ok);
    if (!ok || k.cubin.empty()) return std::nullopt;
    k.log = meta.at("log").get<std::string>();
    const json& u = meta.at("usage");
    k.usage = {u.at("registers"),    u.at("static_smem"), u.at("stack_bytes"),
               u.at("spill_stores"), u.at("spill_loads"), u.at("barriers")};
    k.lowered_name = meta.at("lowered_name").get<std::string>();
    k.compile_ms = meta.at("compile_ms").get<double>();
    k.from_cache = true;
    return CompileResult{std::move(k)};
  } catch (const json::exception&) {
    return std::nullopt;  // a damaged entry is compiled again
  }
}

CompileResult CompileCache::load_or_compile(const std::string& key, const CompileJob& job,
                                            bool* compiled_now) const {
  std::optional<CompileResult> result = load(key);
  if (compiled_now) *compiled_now = !result;
  if (!result) {
    result = compile(job);
    store(key, *result);
  }
  return std::move(*result);
}

void CompileCache::store(const std::string& key, const CompileResult& result) const {
  // Without a usable NVRTC nothing was compiled: there is no outcome to remember.
  if (!enabled() || !nvrtc().error.empty()) return;
  json meta;
  if (const auto* k = std::get_if<CompiledKernel>(&result)) {
    if (!write_atomic(dir_ / (key + ".cubin"), k->cubin)) return;
    meta = {{"ok", true},
            {"log", k->log},
            {"lowered_name", k->lowered_name},
            {"compile_ms", k->compile_ms},
            {"usage",
             {{"registers", k->usage.registers},
              {"static_smem", k->usage.static_smem},
              {"stack_bytes", k->usage.stack_bytes},
              {"spill_stores", k->usage.spill_stores},
              {"spill_loads", k->usage.spill_loads},
              {"barriers", k->usage.barriers}}}};
  } else {
    meta = {{"ok", false}, {"log", std::get<CompileError>(result).log}};
  }
  if (!write_atomic(dir_ / (key + ".json"), meta.dump(-1, ' ', false, json::error_handler_t::replace)))
    std::cerr << "tiletune: warning: cannot write compile cache entry in " << dir_.string() << "\n";
}

namespace {

// Sources travel to the compiler processes as hex: a template may hold any bytes, JSON text only UTF-8.
std::string to_hex(std::string_view bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (const char c : bytes) {
    out += digits[static_cast<unsigned char>(c) >> 4];
    out += digits[static_cast<unsigned char>(c) & 15];
  }
  return out;
}

std::string from_hex(std::string_view hex) {
  auto value = [](char c) { return c <= '9' ? c - '0' : c - 'a' + 10; };
  std::string out(hex.size() / 2, '\0');
  for (std::size_t i = 0; i < out.size(); ++i)
    out[i] = static_cast<char>(value(hex[2 * i]) * 16 + value(hex[2 * i + 1]));
  return out;
}

// Compiler processes are fresh programs (this executable started again with --tiletune-compile), never bare
// forks: a fork of a process in which NVRTC or CUDA already ran can hang or fail. posix_spawn, not fork and
// exec: a fork copies the page tables of a sweep's few hundred megabytes and makes every page copy-on-write
// (with 500 MB, 8 to 15 ms a fork and more again in the parent's page faults after it, on the thread that
// waits for its pick); a spawn shares the memory until the exec (0.2 ms). Each child compiles jobs
// t with t % workers == its index, in order, and writes the cache; the jobs travel in a JSON file.
std::vector<int> spawn_compilers(const std::vector<CompileJob>& jobs, const std::vector<std::size_t>& todo,
                                 const std::vector<std::string>& keys, const CompileCache& cache, int workers,
                                 std::filesystem::path* jobs_file) {
  json list = json::array();
  for (std::size_t i : todo)
    list.push_back({{"source_hex", to_hex(jobs[i].source)},
                    {"file_name", jobs[i].file_name},
                    {"kernel", jobs[i].kernel},
                    {"arch", jobs[i].arch},
                    {"options", jobs[i].options},
                    {"key", keys[i]}});
  static std::atomic<int> serial{0};
  *jobs_file =
      cache.dir() / ("jobs-" + std::to_string(::getpid()) + "-" + std::to_string(++serial) + ".json");
  if (!write_atomic(*jobs_file, json{{"cache", cache.dir().string()}, {"jobs", list}}.dump())) return {};
  std::vector<int> pids;
  std::cout.flush();
  std::cerr.flush();
  for (int c = 0; c < workers; ++c) {
    std::string name = "tiletune-compile", flag = "--tiletune-compile", file = jobs_file->string(),
                index = std::to_string(c), count = std::to_string(workers);
    char* argv[] = {name.data(), flag.data(), file.data(), index.data(), count.data(), nullptr};
    pid_t pid = 0;
    if (::posix_spawn(&pid, "/proc/self/exe", nullptr, nullptr, argv, environ) != 0) break;
    pids.push_back(pid);
  }
  return pids;
}

}  // namespace

std::vector<CompileResult> compile_all(const std::vector<CompileJob>& jobs, const CompileCache& cache,
                                       int workers, ParallelMode mode, CompileStats* stats) {
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::optional<CompileResult>> results(jobs.size());
  std::vector<std::string> keys(jobs.size());
  std::vector<std::size_t> todo;
  CompileStats s;
  s.jobs = static_cast<int>(jobs.size());
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    keys[i] = cache.key(jobs[i]);
    results[i] = cache.load(keys[i]);
    if (results[i])
      ++s.from_cache;
    else
      todo.push_back(i);
  }
  workers = std::max(1, std::min<int>(workers, static_cast<int>(todo.size())));
  if (!todo.empty()) {
    if (mode == ParallelMode::processes && cache.enabled() && workers > 1) {
      std::filesystem::path jobs_file;
      for (int pid : spawn_compilers(jobs, todo, keys, cache, workers, &jobs_file))
        ::waitpid(pid, nullptr, 0);
      std::error_code ec;
      std::filesystem::remove(jobs_file, ec);
      for (std::size_t i : todo) results[i] = cache.load(keys[i]);
    } else {
      std::atomic<std::size_t> next{0};
      auto work = [&] {
        for (std::size_t t; (t = next.fetch_add(1)) < todo.size();) {
          const std::size_t i = todo[t];
          results[i] = compile(jobs[i]);
          cache.store(keys[i], *results[i]);
        }
      };
      std::vector<std::thread> threads;
      for (int w = 1; w < workers; ++w) threads.emplace_back(work);
      work();
      for (auto& t : threads) t.join();
    }
  }
  std::vector<CompileResult> out;
  out.reserve(jobs.size());
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    if (!results[i]) results[i] = compile(jobs[i]);  // a child died before writing: compile here
    if (std::holds_alternative<CompileError>(*results[i])) ++s.failed;
    out.push_back(std::move(*results[i]));
  }
  s.compiled = static_cast<int>(todo.size());
  s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (stats) *stats = s;
  return out;
}

BackgroundCompiler::BackgroundCompiler(std::vector<CompileJob> jobs, const CompileCache& cache, int workers,
                                       bool eager)
    : jobs_(std::move(jobs)), cache_(cache), workers_(std::max(1, workers)) {
  std::vector<std::size_t> todo;
  for (std::size_t i = 0; i < jobs_.size(); ++i) {
    keys_.push_back(cache_.key(jobs_[i]));
    if (eager && cache_.enabled() && !cached(i)) todo.push_back(i);
  }
  if (cache_.enabled() && !todo.empty())
    children_ = spawn_compilers(jobs_, todo, keys_, cache_,
                                std::min<int>(workers_, static_cast<int>(todo.size())), &jobs_file_);
}

namespace {

// Ends a compile child that is no longer needed. SIGKILL, not SIGTERM: the child has run NVRTC, whose SIGTERM
// handler calls exit(), and a child interrupted inside the allocator then waits in its exit handlers for the
// lock it holds itself, while this process waits for it. A killed child's cache write is at most a temporary
// file (write_atomic renames it into place), which goes too.
void stop_child(int pid, const std::filesystem::path& cache_dir) {
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  std::error_code ec;
  const std::string suffix = ".tmp." + std::to_string(pid);
  for (std::filesystem::directory_iterator it(cache_dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
      std::filesystem::remove(it->path(), ec);
  }
}

}  // namespace

BackgroundCompiler::~BackgroundCompiler() {
  std::error_code ec;
  for (int pid : children_)
    if (pid > 0) stop_child(pid, cache_.dir());
  for (const auto& c : singles_) {
    stop_child(c.pid, cache_.dir());
    std::filesystem::remove(c.file, ec);
  }
  if (!jobs_file_.empty()) std::filesystem::remove(jobs_file_, ec);
}

std::size_t BackgroundCompiler::add_jobs(std::vector<CompileJob> jobs) {
  std::lock_guard<std::mutex> lock(mutex_);
  const std::size_t first = jobs_.size();
  for (auto& job : jobs) {
    keys_.push_back(cache_.key(job));
    jobs_.push_back(std::move(job));
  }
  return first;
}

std::size_t BackgroundCompiler::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return jobs_.size();
}

std::string BackgroundCompiler::key(std::size_t index) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return keys_[index];
}

bool BackgroundCompiler::cached(std::size_t index) const {
  return std::filesystem::exists(cache_.dir() / (keys_[index] + ".json"));
}

bool BackgroundCompiler::in_flight(std::size_t index) const {
  return std::any_of(singles_.begin(), singles_.end(), [&](const Single& c) { return c.index == index; });
}

bool BackgroundCompiler::children_alive() {
  bool any_alive = false;
  for (int& pid : children_) {
    if (pid <= 0) continue;
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid)
      pid = -1;
    else
      any_alive = true;
  }
  return any_alive;
}

void BackgroundCompiler::pump() {
  std::error_code ec;
  for (auto it = singles_.begin(); it != singles_.end();) {
    int status = 0;
    if (::waitpid(it->pid, &status, WNOHANG) == it->pid) {
      std::filesystem::remove(it->file, ec);
      it = singles_.erase(it);
    } else {
      ++it;
    }
  }
  while (!queue_.empty() && static_cast<int>(singles_.size()) < workers_) {
    const std::size_t i = queue_.front();
    queue_.erase(queue_.begin());
    if (in_flight(i) || cached(i)) continue;
    std::filesystem::path file;
    const auto pids = spawn_compilers(jobs_, {i}, keys_, cache_, 1, &file);
    if (pids.empty()) break;
    singles_.push_back({pids.front(), i, file});
  }
}

void BackgroundCompiler::prefetch(const std::vector<std::size_t>& indices) {
  if (!cache_.enabled()) return;
  std::lock_guard<std::mutex> lock(mutex_);
  queue_.clear();  // pump() skips what is cached or compiling by the time a process is free
  for (std::size_t i : indices)
    if (i < jobs_.size()) queue_.push_back(i);
  pump();
}

bool BackgroundCompiler::ready(std::size_t index) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return cache_.enabled() && index < jobs_.size() && cached(index);
}

void BackgroundCompiler::poll() {
  if (!cache_.enabled()) return;
  std::lock_guard<std::mutex> lock(mutex_);
  pump();
}

CompileResult BackgroundCompiler::get(std::size_t index, bool wait_for_children) {
  const std::string key = this->key(index);
  const auto pause = [] { std::this_thread::sleep_for(std::chrono::milliseconds(2)); };
  while (wait_for_children) {
    if (auto hit = cache_.load(key)) return std::move(*hit);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!children_alive()) break;
    }
    pause();
  }
  // A prefetch child that has the job: wait for it (the others keep compiling meanwhile).
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      pump();
      if (!in_flight(index)) break;
    }
    if (auto hit = cache_.load(key)) return std::move(*hit);
    pause();
  }
  if (auto hit = cache_.load(key)) return std::move(*hit);
  CompileJob job;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job = jobs_[index];
  }
  CompileResult r = compile(job);  // NVRTC, here: no lock held, so other threads' jobs go on
  cache_.store(key, r);
  std::lock_guard<std::mutex> lock(mutex_);
  pump();
  return r;
}

int compile_child_main(const std::string& jobs_file, int index, int workers) {
  bool ok = false;
  const std::string text = read_file(jobs_file, &ok);
  if (!ok) return 2;
  try {
    const json doc = json::parse(text);
    const CompileCache cache(doc.at("cache").get<std::string>());
    const json& jobs = doc.at("jobs");
    for (std::size_t t = static_cast<std::size_t>(index); t < jobs.size();
         t += static_cast<std::size_t>(workers)) {
      const json& j = jobs[t];
      const CompileJob job{from_hex(j.at("source_hex").get<std::string>()), j.at("file_name"), j.at("kernel"),
                           j.at("arch"), j.at("options")};
      cache.store(j.at("key").get<std::string>(), compile(job));
    }
  } catch (const std::exception& e) {
    std::cerr << "tiletune compiler process: " << e.what() << "\n";
    return 2;
  }
  return 0;
}

}  // namespace tiletune

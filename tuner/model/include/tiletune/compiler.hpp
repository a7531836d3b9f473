// NVRTC compilation to CUBIN for one architecture, with a persistent cache and parallel compilation in
// worker processes (NVRTC does not scale across threads of one process).
#pragma once

#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace tiletune {

// What ptxas reports for the compiled kernel.
struct ResourceUsage {
  int registers = 0;
  int static_smem = 0;   // bytes
  int stack_bytes = 0;   // local memory stack frame per thread
  int spill_stores = 0;  // bytes
  int spill_loads = 0;
  int barriers = 0;
};

struct CompileJob {
  std::string source;  // full text, parameters already defined
  std::string file_name;
  std::string kernel;  // the kernel as the source names it: extern "C" or C++ (NVRTC lowers the name)
  std::string arch;    // "sm_90"
  std::vector<std::string> options;
};

struct CompiledKernel {
  std::string cubin;
  std::string log;
  ResourceUsage usage;
  // The kernel's symbol in the CUBIN: its mangled name for a C++ kernel, the name itself for extern "C".
  std::string lowered_name;
  double compile_ms = 0;  // NVRTC's wall time when it was compiled (a cache hit keeps the original's)
  bool from_cache = false;
};

struct CompileError {
  std::string log;  // the full NVRTC log, or the API error
};

using CompileResult = std::variant<CompiledKernel, CompileError>;

// The NVRTC version as "13.0"; "none" where NVRTC cannot be opened.
std::string nvrtc_version();
// Empty when NVRTC can be opened (it is opened on first use, not linked); otherwise why not, in one line.
const std::string& nvrtc_unavailable();
// Whether this NVRTC keeps its own compile cache (12.9 and later); tiletune turns it off with --no-cache.
bool nvrtc_has_own_cache();

// A compile log as text: the NUL bytes with which NVRTC joins its log and ptxas's become line breaks, and
// the blank lines they leave at its start go.
std::string readable_log(std::string log);

// Parses ptxas's "-v" lines for one kernel out of an NVRTC log; `kernel` is its lowered name, as ptxas
// reports it. A kernel the log does not report gets zeros (unknown), never another kernel's usage.
ResourceUsage parse_ptxas_usage(const std::string& log, const std::string& kernel);

// Compiles in this process. Never throws on a compile error; the error carries the log.
CompileResult compile(const CompileJob& job);

class CompileCache {
 public:
  // An empty path disables the cache.
  explicit CompileCache(std::filesystem::path dir);
  static std::filesystem::path
  default_dir();  // $TILETUNE_CACHE, else $XDG_CACHE_HOME/tiletune, else ~/.cache/tiletune

  std::string key(const CompileJob& job) const;
  std::optional<CompileResult> load(const std::string& key) const;
  void store(const std::string& key, const CompileResult& result) const;  // atomic; errors only warn
  // The job's result (its key is key(job)) from the cache, else compiled in this process and stored;
  // `compiled_now` says which.
  CompileResult load_or_compile(const std::string& key, const CompileJob& job,
                                bool* compiled_now = nullptr) const;
  bool enabled() const { return !dir_.empty(); }
  const std::filesystem::path& dir() const { return dir_; }

 private:
  std::filesystem::path dir_;
};

enum class ParallelMode { processes, threads };

struct CompileStats {
  int jobs = 0, from_cache = 0, compiled = 0, failed = 0;
  double seconds = 0;
};

// Compiles every job, `workers` at a time, through the cache. With processes, each child compiles its share
// and writes the cache; the parent reads the results back (so processes need the cache enabled; without it
// threads are used). Results are in job order.
std::vector<CompileResult> compile_all(const std::vector<CompileJob>& jobs, const CompileCache& cache,
                                       int workers, ParallelMode mode = ParallelMode::processes,
                                       CompileStats* stats = nullptr);

// Starts compiling in child processes and returns at once, so that measuring can overlap compiling.
// get(i) waits for job i only.
// Safe to use from several threads at once (a sweep over several GPUs waits on it from each GPU's thread):
// every member takes the object's lock, and none holds it while waiting for a compile or compiling.
class BackgroundCompiler {
 public:
  // eager: compile every job ahead, in order, in `workers` processes (for a fixed order). Otherwise nothing
  // is compiled until asked for with prefetch().
  BackgroundCompiler(std::vector<CompileJob> jobs, const CompileCache& cache, int workers, bool eager = true);
  ~BackgroundCompiler();
  BackgroundCompiler(const BackgroundCompiler&) = delete;
  BackgroundCompiler& operator=(const BackgroundCompiler&) = delete;
  // Waits for a child to compile job `index`; with wait_for_children false, a job that no child has taken
  // is compiled here at once (for strategies whose order is not known ahead).
  CompileResult get(std::size_t index, bool wait_for_children = true);
  // Adds jobs after construction (a strategy that finds its candidates as it goes) and returns the index of
  // the first. They compile only when prefetched or asked for.
  std::size_t add_jobs(std::vector<CompileJob> jobs);
  std::size_t size() const;
  // Job `index`'s key in the cache (its CUBIN is there once compiled).
  std::string key(std::size_t index) const;
  // Replaces the queue of jobs to compile next (those not cached and not already compiling), one process
  // each, at most `workers` at a time; the first in the list starts first.
  void prefetch(const std::vector<std::size_t>& indices);
  // Whether job `index`'s result is in the cache now (compiled, here or earlier), without waiting.
  bool ready(std::size_t index) const;
  // Whether compiles go through the cache (and so ahead of an ask, and ready() can say anything).
  bool caching() const { return cache_.enabled(); }
  // Reaps finished compiles and starts queued ones on the freed processes. get() and prefetch() do so too;
  // a sweep also calls this while its GPUs measure, so that the processes never idle with work queued.
  void poll();

 private:
  // With mutex_ held:
  void pump();                           // reaps finished children and starts queued jobs
  bool cached(std::size_t index) const;  // the cache holds job `index`'s result
  bool in_flight(std::size_t index) const;
  bool children_alive();  // whether an eager child is still compiling (reaps those that ended)

  mutable std::mutex mutex_;
  std::vector<CompileJob> jobs_;
  std::vector<std::string> keys_;
  const CompileCache& cache_;
  std::vector<int> children_;  // pids of the eager children
  int workers_ = 1;
  std::filesystem::path jobs_file_;
  struct Single {
    int pid;
    std::size_t index;
    std::filesystem::path file;
  };
  std::vector<Single> singles_;     // prefetch children, one job each
  std::vector<std::size_t> queue_;  // prefetch jobs not started yet
};

// The compiler process's side (see run_child_if_requested).
int compile_child_main(const std::string& jobs_file, int index, int workers);

}  // namespace tiletune

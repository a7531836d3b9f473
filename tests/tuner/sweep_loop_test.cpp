// The sweep loop without a GPU: run_sweep drives a fake worker that answers as the measuring worker does
// (hello, setup, measure) with times made up from each configuration, and can time out or die on chosen
// ones. Everything else is real: the family, pruning, NVRTC compiling, the strategies and the store. So
// dealing, failures and restarts, resume and shards are checked in CI.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "../test_paths.hpp"
#include "tiletune/shard.hpp"
#include "tiletune/sweep.hpp"

namespace tiletune {
namespace {

using nlohmann::json;

// A vector scale with two tunables: BLOCK (1024 threads at most, so 2048 is pruned) and ITEMS.
void write_family(const std::filesystem::path& root) {
  const auto dir = root / "scale";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "scale.cu") << R"(#ifndef BLOCK
#define BLOCK 256
#endif
#ifndef ITEMS
#define ITEMS 1
#endif
extern "C" __global__ void scale(float* x, long long n) {
  long long i = (blockIdx.x * (long long)BLOCK + threadIdx.x) * ITEMS;
  for (int k = 0; k < ITEMS; ++k, ++i)
    if (i < n) x[i] = 2.0f * x[i];
}
)";
  std::ofstream(dir / "scale_reference.cu")
      << R"(extern "C" __global__ void scale_reference(double* x, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) x[i] = 2.0 * x[i];
}
)";
  std::ofstream(dir / "family.json") << R"json({
  "name": "scale", "source": "scale.cu", "kernel": "scale",
  "problem": {"dims": ["n"], "default_sizes": ["1000000"]},
  "parameters": {"BLOCK": {"values": [32, 64, 128, 256, 512, 1024, 2048], "default": 256},
                 "ITEMS": {"values": [1, 2, 4], "default": 1}},
  "launch": {"block": ["BLOCK"], "grid": ["ceil_div(n, BLOCK * ITEMS)"]},
  "arguments": [{"name": "x", "buffer": "float", "count": "n", "role": "inout"},
                {"name": "n", "scalar": "long", "value": "n"}],
  "metric": {"unit": "GB/s", "work": "8 * n"},
  "reference": {"kernel": "scale_reference.cu", "block": ["256"], "grid": ["ceil_div(n, 256)"]}
})json";
}

// The same kernel with three more tunables it ignores, 100 values each: 21,000,000 configurations, more than
// a sweep enumerates, so that a budgeted strategy samples the space lazily.
void write_wide_family(const std::filesystem::path& root) {
  write_family(root);
  const auto dir = root / "scale_wide";
  std::filesystem::create_directories(dir);
  std::filesystem::copy_file(root / "scale" / "scale.cu", dir / "scale.cu");
  std::filesystem::copy_file(root / "scale" / "scale_reference.cu", dir / "scale_reference.cu");
  std::string hundred;
  for (int i = 0; i < 100; ++i) hundred += (i ? ", " : "") + std::to_string(i);
  std::ifstream in(root / "scale" / "family.json");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  text.replace(text.find("\"scale\""), 7, "\"scale_wide\"");
  const std::string items = R"("ITEMS": {"values": [1, 2, 4], "default": 1})";
  text.replace(text.find(items), items.size(),
               items + ", \"PAD_A\": {\"values\": [" + hundred + "]}, \"PAD_B\": {\"values\": [" + hundred +
                   "]}, \"PAD_C\": {\"values\": [" + hundred + "]}");
  std::ofstream(dir / "family.json") << text;
}

// Answers as the measuring worker would. A configuration is known by its launch: block (BLOCK) and grid
// (which gives ITEMS for the fixed n).
class FakeWorker final : public Worker {
 public:
  struct Launch {
    std::int64_t block = 0, grid = 0;
    bool operator<(const Launch& o) const { return std::tie(block, grid) < std::tie(o.block, o.grid); }
    bool operator==(const Launch& o) const { return block == o.block && grid == o.grid; }
  };
  // What a measure request gets; the default is a time that depends on the launch.
  std::function<Reply(const Launch&)> on_measure = [](const Launch& l) { return ok(time_of(l)); };
  std::atomic<bool>* stop_after = nullptr;
  int stop_after_measures = -1;
  // Which GPU it stands for: a device index and a uuid of its own, of the given profile's model.
  int ordinal = -1;
  std::string profile = "h100";
  // Each measurement takes this long, so that the lanes of a sweep on several fake GPUs interleave.
  int measure_delay_ms = 0;

  // Measures every launch but BLOCK=512,ITEMS=2, where the worker dies as a segfault would kill it.
  static Reply dies_on_block512_items2(const Launch& l) {
    Reply r = ok(time_of(l));
    if (l.block == 512 && l.grid == 977) {
      r.status = Reply::Status::died;
      r.detail = "killed by signal 11";
    }
    return r;
  }
  static double time_of(const Launch& l) {
    return 0.5 + 0.001 * static_cast<double>((l.block * 7919 + l.grid * 104729) % 997);
  }
  static Reply ok(double ms) {
    Reply r;
    r.body = json{{"ok", true},
                  {"outcome", "ok"},
                  {"median_ms", ms},
                  {"min_ms", ms * 0.99},
                  {"spread", 0.01},
                  {"reps", 3},
                  {"times_ms", {ms, ms * 0.99, ms * 1.01}}};
    return r;
  }

  Reply request(const json& message, double) override {
    const std::string op = message.at("op");
    Reply r;
    if (op == "hello") {
      DeviceLimits d = load_profile(profile);
      if (ordinal >= 0) d.uuid = "GPU-fake-" + std::to_string(ordinal);
      r.body = json{{"ok", true}, {"summary", d.to_json()}};
    } else if (op == "setup") {
      ++setups;
      r.body = json{{"ok", true}};
    } else if (op == "measure") {
      const Launch l{message.at("kernel").at("block")[0], message.at("kernel").at("grid")[0]};
      ++measured[l];
      if (measure_delay_ms) std::this_thread::sleep_for(std::chrono::milliseconds(measure_delay_ms));
      r = on_measure(l);
      if (r.status != Reply::Status::ok) ++restarts_;
      if (stop_after && ++measures == stop_after_measures) stop_after->store(true);
    } else {
      r.body = json{{"ok", false}, {"error", "unknown op " + op}};
    }
    return r;
  }
  int restarts() const override { return restarts_; }
  int gpu() const override { return ordinal; }

  std::map<Launch, int> measured;
  int setups = 0, measures = 0;

 private:
  int restarts_ = 0;
};

class SweepLoop : public ::testing::Test {
 protected:
  void SetUp() override {
    write_family(root.path);
    family = load_family(root.path / "scale");
    problem.dims = {1000000};
  }

  SweepSummary sweep(Store& store, FakeWorker& worker, SweepOptions options = {},
                     const std::atomic<bool>* stop = nullptr) {
    options.compile_jobs = 2;
    std::ostringstream out;
    SweepSummary s = run_sweep(family, problem, store, worker, cache, options, out, stop);
    log = out.str();
    return s;
  }

  // A sweep on several fake GPUs at once (indices 0, 1, ...), each measurement taking a few milliseconds.
  SweepSummary sweep_on(std::vector<FakeWorker>& gpus, Store& store, SweepOptions options = {},
                        const std::atomic<bool>* stop = nullptr, const KernelFamily* f = nullptr) {
    std::vector<Worker*> workers;
    for (std::size_t i = 0; i < gpus.size(); ++i) {
      gpus[i].ordinal = static_cast<int>(i);
      if (!gpus[i].measure_delay_ms) gpus[i].measure_delay_ms = 3;
      workers.push_back(&gpus[i]);
    }
    options.compile_jobs = 2;
    std::ostringstream out;
    SweepSummary s = run_sweep(f ? *f : family, problem, store, workers, cache, options, out, stop);
    log = out.str();
    return s;
  }

  // A sweep of `strategy` with `budget` on the fake GPUs: it must measure `budget` configurations, each once.
  SweepSummary sweep_each_once_on(std::vector<FakeWorker>& gpus, Store& store, const std::string& strategy,
                                  int budget) {
    SweepOptions options;
    options.strategy = strategy;
    options.budget = static_cast<std::size_t>(budget);
    const SweepSummary s = sweep_on(gpus, store, options);
    EXPECT_EQ(s.measured, budget) << strategy;
    const auto measured = all_measured(gpus);
    EXPECT_EQ(measured.size(), static_cast<std::size_t>(budget)) << strategy;
    for (const auto& [launch, n] : measured) EXPECT_EQ(n, 1) << strategy << " measured a launch twice";
    return s;
  }

  // Every launch the fake GPUs measured, with how often.
  static std::map<FakeWorker::Launch, int> all_measured(const std::vector<FakeWorker>& gpus) {
    std::map<FakeWorker::Launch, int> out;
    for (const auto& g : gpus)
      for (const auto& [launch, n] : g.measured) out[launch] += n;
    return out;
  }

  // What a sweep pruned before compiling, stored as counts: every configuration counted.
  static std::int64_t pruned_stored(const Store& store, std::int64_t sweep_id) {
    return pruned_total(store.pruned_counts(sweep_id));
  }

  // The stored configurations of a sweep by outcome.
  static std::map<std::string, Outcome> outcomes(const Store& store, std::int64_t sweep_id) {
    std::map<std::string, Outcome> out;
    for (const auto& r : store.results(sweep_id)) out[params_to_text(r.record.params)] = r.record.outcome;
    return out;
  }

  // The stored configurations of a sweep.
  static std::set<std::string> configurations(const Store& store, std::int64_t sweep_id) {
    std::set<std::string> out;
    for (const auto& [text, outcome] : outcomes(store, sweep_id)) out.insert(text);
    return out;
  }

  // A sweep's ok configurations, fastest first, each with `extra`'s parameters set as well.
  static std::vector<std::string> fastest_ok(const Store& store, std::int64_t sweep_id,
                                             const Params& extra = {}) {
    std::vector<std::pair<double, std::string>> ok;
    for (const auto& r : store.results(sweep_id)) {
      if (r.record.outcome != Outcome::ok) continue;
      Params p = r.record.params;
      for (const auto& [name, v] : extra) p[name] = v;
      ok.emplace_back(*r.record.median_ms, params_to_text(p));
    }
    std::sort(ok.begin(), ok.end());
    std::vector<std::string> out;
    for (auto& [ms, text] : ok) out.push_back(std::move(text));
    return out;
  }

  test::TempDir root, db_dir;
  inline static test::TempDir cache_dir;  // shared, so that each configuration compiles once per run
  CompileCache cache{cache_dir.path};
  KernelFamily family;
  ProblemKey problem;
  std::string log;
};

// What was pruned before compiling is stored as counts by reason, never as results.
TEST_F(SweepLoop, BruteForceMeasuresEveryRunnableConfigurationOnceAndCountsThePrunedOnes) {
  Store store = Store::open(db_dir.path / "a.db");
  FakeWorker worker;
  const SweepSummary s = sweep(store, worker);
  EXPECT_EQ(s.measured, 18);
  EXPECT_EQ(s.counts.at(Outcome::ok), 18);
  EXPECT_EQ(s.counts.at(Outcome::pruned), 3);  // BLOCK=2048
  const PrunedCounts pruned = store.pruned_counts(s.sweep_id);
  ASSERT_EQ(pruned.size(), 1u);
  EXPECT_NE(pruned.begin()->first.find("2048"), std::string::npos) << pruned.begin()->first;
  EXPECT_EQ(pruned.begin()->second, 3);
  const auto stored = outcomes(store, s.sweep_id);
  EXPECT_EQ(stored.size(), 18u);
  for (const auto& [params, outcome] : stored) EXPECT_EQ(outcome, Outcome::ok) << params;
  EXPECT_EQ(worker.measured.size(), 18u);
  for (const auto& [launch, times] : worker.measured)
    EXPECT_EQ(times, 1) << launch.block << " " << launch.grid;
  EXPECT_EQ(worker.setups, 1);
  // The best is the fake's fastest launch, stored with its runs and NVRTC's compile time.
  double fastest = 1e9;
  for (const auto& [launch, times] : worker.measured)
    fastest = std::min(fastest, FakeWorker::time_of(launch));
  ASSERT_TRUE(s.best);
  EXPECT_EQ(*s.best->record.median_ms, fastest);
  EXPECT_EQ(s.best->record.times_ms.size(), 3u);
  EXPECT_TRUE(s.best->record.measure_ms.has_value());
  EXPECT_TRUE(s.best->record.compile_ms.has_value());
  EXPECT_GT(*s.best->record.metric, 0);
  EXPECT_EQ(store.sweep(s.sweep_id)->status, "done");
}

TEST_F(SweepLoop, TimeoutsAndDeathsCostOnlyTheirConfigurationAndRestartTheWorker) {
  Store store = Store::open(db_dir.path / "a.db");
  FakeWorker worker;
  worker.on_measure = [](const FakeWorker::Launch& l) {
    Worker::Reply r = FakeWorker::ok(FakeWorker::time_of(l));
    if (l.block == 64) r.status = Worker::Reply::Status::timeout;  // three configurations
    if (l.block == 512 && l.grid == 977) {                         // ITEMS=2
      r.status = Worker::Reply::Status::died;
      r.detail = "killed by signal 11";
    }
    return r;
  };
  SweepOptions options;
  options.timeout_s = 5;
  const SweepSummary s = sweep(store, worker, options);
  EXPECT_EQ(s.counts.at(Outcome::timeout), 3);
  EXPECT_EQ(s.counts.at(Outcome::runtime_failed), 1);
  EXPECT_EQ(s.counts.at(Outcome::ok), 14);
  EXPECT_EQ(worker.restarts(), 4);
  // Every failure needs a fresh worker, set up again before its next measurement.
  EXPECT_GE(worker.setups, 4);
  const auto stored = outcomes(store, s.sweep_id);
  EXPECT_EQ(stored.at("BLOCK=512,ITEMS=2"), Outcome::runtime_failed);
  EXPECT_EQ(stored.at("BLOCK=64,ITEMS=4"), Outcome::timeout);
  EXPECT_EQ(stored.size(), 18u);
  EXPECT_EQ(pruned_stored(store, s.sweep_id), 3);
}

TEST_F(SweepLoop, AnInterruptedSweepResumesWithWhatIsLeft) {
  Store store = Store::open(db_dir.path / "a.db");
  std::atomic<bool> stop{false};
  FakeWorker first;
  first.stop_after = &stop;
  first.stop_after_measures = 7;
  const SweepSummary a = sweep(store, first, {}, &stop);
  EXPECT_TRUE(a.interrupted);
  EXPECT_EQ(store.sweep(a.sweep_id)->status, "interrupted");
  EXPECT_EQ(first.measures, 7);
  EXPECT_EQ(pruned_stored(store, a.sweep_id), 3);

  FakeWorker second;
  SweepOptions resume;
  resume.resume = true;
  const SweepSummary b = sweep(store, second, resume);
  EXPECT_EQ(b.sweep_id, a.sweep_id);
  EXPECT_EQ(second.measured.size(), 11u);  // 18 runnable, 7 measured before
  for (const auto& [launch, n] : second.measured) EXPECT_EQ(first.measured.count(launch), 0u);
  EXPECT_EQ(outcomes(store, a.sweep_id).size(), 18u);
  // The resumed run prunes the space again: the counts stay those of the space, not twice them.
  EXPECT_EQ(b.counts.at(Outcome::pruned), 3);
  EXPECT_EQ(pruned_stored(store, a.sweep_id), 3);
  EXPECT_EQ(store.sweep(a.sweep_id)->status, "done");
}

// A resumed sweep with a budget measures what is left of it, not the budget again; one that had spent it all
// measures nothing and is done.
TEST_F(SweepLoop, AResumedSweepMeasuresWhatIsLeftOfItsBudget) {
  Store store = Store::open(db_dir.path / "a.db");
  std::atomic<bool> stop{false};
  FakeWorker first;
  first.stop_after = &stop;
  first.stop_after_measures = 5;
  SweepOptions options;
  options.strategy = "random";
  options.budget = 12;
  const SweepSummary a = sweep(store, first, options, &stop);
  ASSERT_TRUE(a.interrupted);
  ASSERT_EQ(first.measures, 5);

  FakeWorker second;
  options.resume = true;
  const SweepSummary b = sweep(store, second, options);
  EXPECT_EQ(b.sweep_id, a.sweep_id);
  EXPECT_EQ(second.measured.size(), 7u);  // 12 - 5
  EXPECT_NE(log.find("5 of them measured, 7 left of the budget of 12"), std::string::npos) << log;
  for (const auto& [launch, n] : second.measured) EXPECT_EQ(first.measured.count(launch), 0u);
  EXPECT_EQ(store.sweep(a.sweep_id)->status, "done");

  std::atomic<bool> stop_c{false};
  FakeWorker third;
  third.stop_after = &stop_c;
  third.stop_after_measures = 4;
  options.resume = false;
  options.budget = 4;
  const SweepSummary c = sweep(store, third, options, &stop_c);
  ASSERT_TRUE(c.interrupted);
  FakeWorker fourth;
  options.resume = true;
  const SweepSummary d = sweep(store, fourth, options);
  EXPECT_EQ(d.sweep_id, c.sweep_id);
  EXPECT_TRUE(fourth.measured.empty());
  EXPECT_EQ(store.sweep(c.sweep_id)->status, "done");
}

TEST_F(SweepLoop, ShardsSplitTheSpaceAndTogetherFindTheSameBest) {
  Store whole_store = Store::open(db_dir.path / "whole.db");
  FakeWorker whole_worker;
  const SweepSummary whole = sweep(whole_store, whole_worker);

  std::set<std::string> seen;
  std::optional<double> best;
  std::size_t measured = 0;
  std::int64_t pruned = 0;
  for (std::uint64_t i = 0; i < 4; ++i) {
    Store store = Store::open(db_dir.path / ("shard" + std::to_string(i) + ".db"));
    FakeWorker worker;
    SweepOptions options;
    options.shard = Shard{i, 4};
    const SweepSummary s = sweep(store, worker, options);
    EXPECT_NE(log.find("in shard " + std::to_string(i) + "/4"), std::string::npos) << log;
    EXPECT_EQ(store.sweep(s.sweep_id)->strategy, "brute_force shard " + std::to_string(i) + "/4");
    for (const auto& [params, outcome] : outcomes(store, s.sweep_id))
      EXPECT_TRUE(seen.insert(params).second) << params << " is in two shards";
    pruned += pruned_stored(store, s.sweep_id);
    measured += worker.measured.size();
    if (s.best && (!best || *s.best->record.median_ms < *best)) best = *s.best->record.median_ms;
  }
  EXPECT_EQ(seen.size(), 18u);
  EXPECT_EQ(pruned, 3);
  EXPECT_EQ(measured, 18u);
  ASSERT_TRUE(best && whole.best);
  EXPECT_EQ(*best, *whole.best->record.median_ms);
}

TEST_F(SweepLoop, ShardsOfASpaceTooLargeToEnumerateDrawOnlyTheirOwnPart) {
  write_wide_family(root.path);
  const KernelFamily wide = load_family(root.path / "scale_wide");
  const SpaceIndex index(wide);
  ASSERT_EQ(index.size(), 21'000'000u);
  std::set<std::string> seen;
  for (std::uint64_t i = 0; i < 3; ++i) {
    Store store = Store::open(db_dir.path / ("wide" + std::to_string(i) + ".db"));
    FakeWorker worker;
    SweepOptions options;
    options.strategy = "random";
    options.budget = 4;
    options.shard = Shard{i, 3};
    options.compile_jobs = 2;
    std::ostringstream out;
    const SweepSummary s = run_sweep(wide, problem, store, worker, cache, options, out);
    EXPECT_NE(out.str().find("(shard " + std::to_string(i) + "/3), sampled lazily"), std::string::npos)
        << out.str();
    EXPECT_EQ(s.measured, 4);
    for (const auto& r : store.results(s.sweep_id)) {
      const auto at = index.index_of(r.record.params);
      ASSERT_TRUE(at);
      EXPECT_TRUE(options.shard.contains(*at)) << params_to_text(r.record.params) << " is not in shard " << i;
      EXPECT_TRUE(seen.insert(params_to_text(r.record.params)).second);
    }
  }
}

TEST_F(SweepLoop, RandomWithABudgetMeasuresThatManyDistinctConfigurations) {
  Store store = Store::open(db_dir.path / "a.db");
  FakeWorker worker;
  SweepOptions options;
  options.strategy = "random";
  options.budget = 5;
  const SweepSummary s = sweep(store, worker, options);
  EXPECT_EQ(s.measured, 5);
  EXPECT_EQ(worker.measured.size(), 5u);
  for (const auto& [launch, n] : worker.measured) EXPECT_EQ(n, 1);
}

TEST_F(SweepLoop, TwoGpusDealTheSpaceOutMeasureEachConfigurationOnceAndFindTheSameBest) {
  Store one_store = Store::open(db_dir.path / "one.db");
  FakeWorker one;
  const SweepSummary single = sweep(one_store, one);

  Store store = Store::open(db_dir.path / "two.db");
  std::vector<FakeWorker> gpus(2);
  const SweepSummary s = sweep_on(gpus, store);
  EXPECT_EQ(s.measured, 18);
  const auto measured = all_measured(gpus);
  EXPECT_EQ(measured.size(), 18u);
  for (const auto& [launch, n] : measured) EXPECT_EQ(n, 1) << launch.block << " " << launch.grid;
  ASSERT_EQ(s.gpus.size(), 2u);
  EXPECT_EQ(s.gpus[0].ordinal, 0);
  EXPECT_EQ(s.gpus[1].ordinal, 1);
  EXPECT_EQ(s.gpus[0].measured + s.gpus[1].measured, 18);
  for (const auto& g : s.gpus) {
    EXPECT_GT(g.measured, 0) << "GPU " << g.ordinal << " measured nothing";
    EXPECT_GT(g.busy_seconds, 0);
  }
  for (const auto& g : gpus) EXPECT_EQ(g.setups, 1);
  EXPECT_EQ(store.sweep(s.sweep_id)->strategy, "brute_force on 2 GPUs");
  EXPECT_EQ(store.sweep(s.sweep_id)->device.uuid, "GPU-fake-0");
  EXPECT_EQ(outcomes(store, s.sweep_id), outcomes(one_store, single.sweep_id));
  ASSERT_TRUE(s.best && single.best);
  EXPECT_EQ(params_to_text(s.best->record.params), params_to_text(single.best->record.params));
  EXPECT_NE(log.find("measuring on 2 GPUs: 0 1"), std::string::npos) << log;
}

TEST_F(SweepLoop, RandomOnThreeGpusMeasuresTheSampleOneGpuWould) {
  SweepOptions options;
  options.strategy = "random";
  options.budget = 7;
  Store one_store = Store::open(db_dir.path / "one.db");
  FakeWorker one;
  sweep(one_store, one, options);

  Store store = Store::open(db_dir.path / "three.db");
  std::vector<FakeWorker> gpus(3);
  const SweepSummary s = sweep_on(gpus, store, options);
  EXPECT_EQ(s.measured, 7);
  EXPECT_EQ(all_measured(gpus), one.measured);
}

TEST_F(SweepLoop, AnnealingOnTwoGpusRunsAWalkerOnEachAndNeverMeasuresTwice) {
  Store store = Store::open(db_dir.path / "a.db");
  std::vector<FakeWorker> gpus(2);
  const SweepSummary s = sweep_each_once_on(gpus, store, "annealing", 12);
  EXPECT_EQ(s.walkers, 2);
  EXPECT_EQ(store.sweep(s.sweep_id)->strategy, "annealing on 2 GPUs (2 walkers)");
  EXPECT_NE(log.find("one annealing walker per GPU"), std::string::npos) << log;
}

// Guided on two GPUs refits while the other GPU measures: what is in flight there is taken (never dealt
// twice, counted against the budget) but has no time yet.
TEST_F(SweepLoop, GuidedOnTwoGpusNeverMeasuresTwiceAndKeepsItsBudget) {
  Store store = Store::open(db_dir.path / "g.db");
  std::vector<FakeWorker> gpus(2);
  const SweepSummary s = sweep_each_once_on(gpus, store, "guided", 12);
  for (const auto& g : gpus) EXPECT_FALSE(g.measured.empty()) << "GPU " << g.ordinal << " idle: " << log;
  EXPECT_EQ(store.results(s.sweep_id).size(), 12u);
  // The time the strategy took to choose is counted (its fits), and is part of the sweep's.
  EXPECT_GT(s.choosing_seconds, 0.0);
  EXPECT_LT(s.choosing_seconds, s.seconds);
}

TEST_F(SweepLoop, SamplingASpaceTooLargeToEnumerateOnTwoGpusStoresEachPointOnce) {
  write_wide_family(root.path);
  const KernelFamily wide = load_family(root.path / "scale_wide");
  for (const std::string strategy : {"random", "annealing"}) {
    Store store = Store::open(db_dir.path / (strategy + ".db"));
    std::vector<FakeWorker> gpus(2);
    SweepOptions options;
    options.strategy = strategy;
    options.budget = 10;
    const SweepSummary s = sweep_on(gpus, store, options, nullptr, &wide);
    EXPECT_EQ(s.measured, 10) << strategy;
    std::set<std::string> seen;
    int ok = 0;
    for (const auto& r : store.results(s.sweep_id)) {
      EXPECT_TRUE(seen.insert(params_to_text(r.record.params)).second)
          << strategy << ": " << params_to_text(r.record.params) << " stored twice";
      ok += r.record.outcome == Outcome::ok;
    }
    EXPECT_EQ(ok, 10) << strategy;
    // The draws pruned some points (BLOCK=2048 is one in seven): counted, not stored.
    EXPECT_EQ(seen.size(), 10u) << strategy;
    EXPECT_EQ(pruned_stored(store, s.sweep_id),
              s.counts.count(Outcome::pruned) ? s.counts.at(Outcome::pruned) : 0)
        << strategy;
  }
}

// A space too large to enumerate is pruned as the strategy draws: what the draws pruned is counted by
// reason when the sweep ends, as an enumerated sweep's is, and never stored as results.
TEST_F(SweepLoop, TheDrawsOfASampledSpaceCountWhatTheyPruned) {
  write_wide_family(root.path);
  const KernelFamily wide = load_family(root.path / "scale_wide");
  Store store = Store::open(db_dir.path / "a.db");
  std::vector<FakeWorker> gpus(1);
  SweepOptions options;
  options.strategy = "random";
  options.budget = 30;
  const SweepSummary s = sweep_on(gpus, store, options, nullptr, &wide);
  ASSERT_GT(s.counts.count(Outcome::pruned), 0u);
  EXPECT_GT(s.counts.at(Outcome::pruned), 0);
  EXPECT_EQ(pruned_stored(store, s.sweep_id), s.counts.at(Outcome::pruned));
  for (const auto& [reason, n] : store.pruned_counts(s.sweep_id))
    EXPECT_NE(reason.find("2048"), std::string::npos) << reason;
  for (const auto& r : store.results(s.sweep_id)) EXPECT_EQ(r.record.outcome, Outcome::ok);
  EXPECT_EQ(store.results(s.sweep_id).size(), 30u);
}

TEST_F(SweepLoop, AWorkerThatDiesOnOneGpuCostsOnlyItsConfiguration) {
  Store store = Store::open(db_dir.path / "a.db");
  std::vector<FakeWorker> gpus(2);
  for (auto& g : gpus) g.on_measure = FakeWorker::dies_on_block512_items2;  // on whichever GPU it is dealt to
  const SweepSummary s = sweep_on(gpus, store);
  EXPECT_EQ(s.counts.at(Outcome::runtime_failed), 1);
  EXPECT_EQ(s.counts.at(Outcome::ok), 17);
  EXPECT_EQ(s.worker_restarts, 1);
  EXPECT_EQ(s.gpus[0].worker_restarts + s.gpus[1].worker_restarts, 1);
  EXPECT_EQ(outcomes(store, s.sweep_id).at("BLOCK=512,ITEMS=2"), Outcome::runtime_failed);
  EXPECT_EQ(outcomes(store, s.sweep_id).size(), 18u);
}

TEST_F(SweepLoop, AnInterruptedSweepOnTwoGpusResumesOnItsFirstGpuAlone) {
  Store store = Store::open(db_dir.path / "a.db");
  std::atomic<bool> stop{false};
  std::vector<FakeWorker> gpus(2);
  gpus[1].stop_after = &stop;
  gpus[1].stop_after_measures = 3;
  const SweepSummary a = sweep_on(gpus, store, {}, &stop);
  EXPECT_TRUE(a.interrupted);
  const auto first = all_measured(gpus);
  EXPECT_LT(first.size(), 18u);
  EXPECT_EQ(static_cast<int>(first.size()), a.measured);  // what was in flight finished and was stored

  std::vector<FakeWorker> second(1);  // GPU 0 again
  SweepOptions resume;
  resume.resume = true;
  const SweepSummary b = sweep_on(second, store, resume);
  EXPECT_EQ(b.sweep_id, a.sweep_id);
  for (const auto& [launch, n] : second[0].measured) EXPECT_EQ(first.count(launch), 0u);
  EXPECT_EQ(first.size() + second[0].measured.size(), 18u);
  EXPECT_EQ(store.sweep(a.sweep_id)->status, "done");
}

TEST_F(SweepLoop, ResumingOnSeveralGpusPassesOverAnotherModelsUnfinishedSweep) {
  Store store = Store::open(db_dir.path / "a.db");
  std::atomic<bool> stop{false};
  std::vector<FakeWorker> h100s(2);
  h100s[0].stop_after = &stop;
  h100s[0].stop_after_measures = 2;
  const SweepSummary first = sweep_on(h100s, store, {}, &stop);
  ASSERT_TRUE(first.interrupted);
  // A newer unfinished sweep of the same problem on another model.
  std::atomic<bool> stop_a100{false};
  FakeWorker a100;
  a100.profile = "a100";
  a100.ordinal = 7;
  a100.stop_after = &stop_a100;
  a100.stop_after_measures = 2;
  ASSERT_TRUE(sweep(store, a100, {}, &stop_a100).interrupted);

  std::vector<FakeWorker> again(2);
  SweepOptions resume;
  resume.resume = true;
  const SweepSummary b = sweep_on(again, store, resume);
  EXPECT_EQ(b.sweep_id, first.sweep_id);
  EXPECT_EQ(store.sweep(first.sweep_id)->status, "done");
  EXPECT_EQ(store.sweeps("scale", "", problem).front().status, "interrupted");  // the A100's, untouched
}

TEST_F(SweepLoop, ASweepCountsOnlyItsOwnWorkerRestarts) {
  Store store = Store::open(db_dir.path / "a.db");
  FakeWorker worker;
  worker.on_measure = FakeWorker::dies_on_block512_items2;
  EXPECT_EQ(sweep(store, worker).worker_restarts, 1);
  worker.on_measure = [](const FakeWorker::Launch& l) { return FakeWorker::ok(FakeWorker::time_of(l)); };
  const SweepSummary second = sweep(store, worker);  // the same worker, as in the main job
  EXPECT_EQ(second.worker_restarts, 0);
  EXPECT_EQ(worker.restarts(), 1);
}

TEST_F(SweepLoop, GpusOfDifferentModelsNeverShareASweep) {
  Store store = Store::open(db_dir.path / "a.db");
  std::vector<FakeWorker> gpus(2);
  gpus[1].profile = "a100";
  try {
    sweep_on(gpus, store);
    ADD_FAILURE() << "an H100 and an A100 shared a sweep";
  } catch (const SweepError& e) {
    EXPECT_NE(std::string(e.what()).find("one sweep per model"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(store.sweeps("scale", "", problem).empty());
  for (const auto& g : gpus) EXPECT_EQ(g.measures, 0);
}

TEST_F(SweepLoop, AutoBruteForcesWithinItsBudgetAndSamplesBeyond) {
  SweepOptions options;
  options.strategy = "auto";
  options.budget = 100;
  Store store = Store::open(db_dir.path / "a.db");
  FakeWorker all;
  const SweepSummary whole = sweep(store, all, options);
  EXPECT_EQ(whole.strategy, "brute_force");
  EXPECT_EQ(whole.measured, 18);
  EXPECT_NE(log.find("auto: 18 runnable configurations, within the budget of 100: brute force"),
            std::string::npos)
      << log;

  options.budget = 5;
  FakeWorker some;
  const SweepSummary sample = sweep(store, some, options);
  EXPECT_EQ(sample.strategy, "guided");
  EXPECT_EQ(store.sweep(sample.sweep_id)->strategy, "guided");
  EXPECT_EQ(sample.measured, 5);
  EXPECT_NE(log.find("more than the budget of 5: guided search for 5"), std::string::npos) << log;
  // It found its best at one of those five measurements, and says when.
  EXPECT_GE(sample.best_found_at, 1u);
  EXPECT_LE(sample.best_found_at, 5u);
  EXPECT_EQ(store.sweep(sample.sweep_id)->best_found_count, static_cast<std::int64_t>(sample.best_found_at));
  // The first sweep of this family in the store: the second starts from it, and says so first.
  EXPECT_NE(log.find("guided: transfer from 1 sweep of this family"), std::string::npos) << log;
}

// A sibling family (the same template over elements of the same size) swept on this problem: guided starts
// from its best, so the first measurement is this family's best as well, and the sweep says where it started.
TEST_F(SweepLoop, GuidedStartsFromASiblingsSweepOfTheSameProblem) {
  Store store = Store::open(db_dir.path / "s.db");
  KernelFamily twin = family;
  twin.name = "scale_twin";
  FakeWorker all;
  SweepOptions whole;
  whole.compile_jobs = 2;
  std::ostringstream twin_log;
  const SweepSummary brute = run_sweep(twin, problem, store, all, cache, whole, twin_log);
  ASSERT_EQ(brute.measured, 18);
  ProblemKey other = problem;
  other.dims = {5};  // the twin's sweep of another problem is not this one's prior
  run_sweep(twin, other, store, all, cache, whole, twin_log);

  SweepOptions options;
  options.strategy = "guided";
  options.budget = 6;
  options.siblings = {"scale_twin", "no_such_family"};
  FakeWorker some;
  const SweepSummary s = sweep(store, some, options);
  EXPECT_EQ(s.measured, 6);
  EXPECT_EQ(s.best_found_at, 1u) << log;
  EXPECT_EQ(s.best->record.median_ms, brute.best->record.median_ms);
  EXPECT_EQ(params_to_text(s.best->record.params), params_to_text(brute.best->record.params));
  EXPECT_NE(log.find("guided: transfer from 1 sweep of sibling families (scale_twin at 1000000 on "),
            std::string::npos)
      << log;
  // Without the sibling named, nothing of it is used.
  options.siblings.clear();
  FakeWorker alone;
  sweep(store, alone, options);
  EXPECT_EQ(log.find("scale_twin"), std::string::npos) << log;
}

// A sweep stored before the family gained a parameter (ITEMS; the kernel took its default then) holds
// configurations without it: guided reads them with the family's default and measures their three fastest
// first, where as stored they would match nothing.
TEST_F(SweepLoop, GuidedStartsFromASweepStoredBeforeTheFamilyGainedAParameter) {
  Store store = Store::open(db_dir.path / "grown.db");
  KernelFamily before = family;
  before.parameters.erase(std::remove_if(before.parameters.begin(), before.parameters.end(),
                                         [](const Parameter& p) { return p.name == "ITEMS"; }),
                          before.parameters.end());
  before.launch.grid = {Expr::parse("ceil_div(n, BLOCK)")};
  FakeWorker all;
  SweepOptions whole;
  whole.compile_jobs = 2;
  std::ostringstream before_log;
  const SweepSummary brute = run_sweep(before, problem, store, all, cache, whole, before_log);
  ASSERT_EQ(brute.measured, 6) << before_log.str();
  for (const auto& r : store.results(brute.sweep_id)) ASSERT_EQ(r.record.params.count("ITEMS"), 0u);
  const std::vector<std::string> fastest = fastest_ok(store, brute.sweep_id, {{"ITEMS", 1}});
  ASSERT_GE(fastest.size(), 3u);

  SweepOptions options;
  options.strategy = "guided";
  options.budget = 3;
  FakeWorker some;
  const SweepSummary s = sweep(store, some, options);
  ASSERT_EQ(s.measured, 3);
  EXPECT_EQ(configurations(store, s.sweep_id), (std::set<std::string>{fastest[0], fastest[1], fastest[2]}))
      << log;
  EXPECT_NE(log.find("guided: transfer from 1 sweep of this family (1000000 on "), std::string::npos) << log;
  EXPECT_NE(log.find("): their 3 fastest first"), std::string::npos) << log;
}

// A space too large to enumerate: guided measures the fastest configurations of the family's sweep of another
// problem first, and says so; a sweep in another store, with nothing earlier, measures none of them.
TEST_F(SweepLoop, GuidedOverAHugeSpaceStartsFromTheFastestOfAnEarlierSweep) {
  write_wide_family(root.path);
  const KernelFamily wide = load_family(root.path / "scale_wide");
  Store store = Store::open(db_dir.path / "huge.db");
  ProblemKey other = problem;
  other.dims = {500000};
  SweepOptions random;
  random.strategy = "random";
  random.budget = 12;
  random.compile_jobs = 2;
  FakeWorker worker;
  std::ostringstream earlier_log;
  const SweepSummary earlier = run_sweep(wide, other, store, worker, cache, random, earlier_log);
  ASSERT_EQ(earlier.measured, 12);
  const std::vector<std::string> fastest = fastest_ok(store, earlier.sweep_id);
  ASSERT_GE(fastest.size(), 3u);

  SweepOptions guided;
  guided.strategy = "guided";
  guided.budget = 6;
  guided.compile_jobs = 2;
  const auto measured = [&](Store& in, std::ostringstream& out) {
    FakeWorker gpu;
    const SweepSummary s = run_sweep(wide, problem, in, gpu, cache, guided, out);
    EXPECT_EQ(s.measured, 6);
    return configurations(in, s.sweep_id);
  };
  std::ostringstream out;
  const std::set<std::string> texts = measured(store, out);
  for (std::size_t i = 0; i < 3; ++i) EXPECT_TRUE(texts.count(fastest[i])) << fastest[i];
  EXPECT_NE(out.str().find("guided: transfer from 1 sweep of this family (500000 on "), std::string::npos)
      << out.str();
  EXPECT_NE(out.str().find("their 3 fastest that run here first"), std::string::npos) << out.str();

  Store fresh = Store::open(db_dir.path / "fresh.db");
  std::ostringstream alone;
  const std::set<std::string> without = measured(fresh, alone);
  for (std::size_t i = 0; i < 3; ++i) EXPECT_FALSE(without.count(fastest[i])) << fastest[i];
  EXPECT_EQ(alone.str().find("transfer"), std::string::npos) << alone.str();
}

TEST(ShardText, IsReadStrictlyAndSplitsEvenly) {
  EXPECT_EQ(parse_shard("3/4").index, 3u);
  EXPECT_EQ(parse_shard("0/1").text(), "");
  for (const char* bad : {"4/4", "1", "a/4", "-1/4", "1/0", "1/2/3", "", "/", "1/99999999"}) {
    try {
      parse_shard(bad);
      ADD_FAILURE() << bad;
    } catch (const std::invalid_argument& e) {
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
      EXPECT_EQ(std::string(e.what()).rfind("--shard", 0), 0u) << e.what();
    }
  }
  // Each of 8 shards of 80,000 indices holds an eighth, within 3%.
  std::vector<int> counts(8);
  for (std::uint64_t i = 0; i < 80000; ++i)
    for (std::uint64_t s = 0; s < 8; ++s)
      if (Shard{s, 8}.contains(i)) ++counts[s];
  for (int c : counts) EXPECT_NEAR(c, 10000, 300);
  EXPECT_TRUE(Shard{}.contains(12345));
}

}  // namespace
}  // namespace tiletune

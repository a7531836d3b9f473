// Bundles without a GPU: what `tiletune export --format bundle` writes from a database (the best
// configuration of each family, device and problem, compiled with NVRTC), what it leaves out and why, how the
// runtime's lookup in a bundle falls back, and the refusals of a bundle that is not one.
#include "tiletune/bundle.hpp"

#include <gtest/gtest.h>

#include <fstream>

#include "../file_bytes.hpp"
#include "../test_paths.hpp"
#include "tiletune/device.hpp"
#include "tiletune/plan.hpp"
#include "tiletune/runtime.hpp"

using namespace tiletune;
using tiletune::test::TempDir;

namespace {

const KernelFamily& builtin(const std::vector<KernelFamily>& families, const std::string& name) {
  return find_family(families, name);
}

SweepSpec spec_for(const KernelFamily& f, const DeviceLimits& device, const ProblemKey& problem) {
  return sweep_spec(f, device, problem, "sweep", "brute_force");
}

ResultRecord ok_result(const Params& params, double median_ms) {
  ResultRecord r;
  r.params = params;
  r.median_ms = median_ms;
  r.min_ms = median_ms;
  r.repetitions = 5;
  r.metric = 1000.0 / median_ms;
  r.metric_unit = "GFLOP/s";
  return r;
}

// A database with gemm_tiled tuned on an H100 at two sizes (a slower default and a faster other
// configuration at the first), a sweep of a template since changed, and one of a family not known here.
struct TunedDatabase {
  TempDir dir;
  std::vector<KernelFamily> families = load_families({test::templates_dir()});
  DeviceLimits h100 = load_profile("h100");
  Params fast;
  std::filesystem::path db = dir.path / "t.db";

  TunedDatabase() {
    const KernelFamily& gemm = builtin(families, "gemm_tiled");
    fast = gemm.default_params();
    fast["TILE_WIDTH"] = 32;
    Store store = Store::open(db);
    store.add_sweep(spec_for(gemm, h100, {{1000, 1000, 1000}, {}}),
                    {ok_result(gemm.default_params(), 2.0), ok_result(fast, 1.0)});
    store.add_sweep(spec_for(gemm, h100, {{4096, 4096, 4096}, {}}), {ok_result(fast, 30.0)});
    SweepSpec changed = spec_for(builtin(families, "gemm_naive"), h100, {{512, 512, 512}, {}});
    changed.template_hash = "0000";
    store.add_sweep(changed, {ok_result(builtin(families, "gemm_naive").default_params(), 5.0)});
    SweepSpec ghost = spec_for(gemm, h100, {{64, 64, 64}, {}});
    ghost.family = "ghost";
    store.add_sweep(ghost, {ok_result(gemm.default_params(), 1.0)});
  }
};

}  // namespace

TEST(Bundle, HoldsEachProblemsBestCompiledAndLeavesOutWhatItCannotVouchFor) {
  TunedDatabase t;
  const auto out = t.dir.path / "bundle";
  const CompileCache cache(t.dir.path / "cache");
  const BundleSummary summary =
      write_bundle(Store::open(t.db, Store::Mode::read_only), t.families, out, "", "", cache);
  EXPECT_EQ(summary.entries, 2);
  EXPECT_EQ(summary.cubins, 1);  // one configuration won both sizes: one CUBIN
  ASSERT_EQ(summary.skipped.size(), 2u);
  std::string skipped = summary.skipped[0] + "\n" + summary.skipped[1];
  EXPECT_NE(
      skipped.find("gemm_naive on NVIDIA H100 80GB HBM3 at 512x512x512: the family changed since it was "
                   "tuned"),
      std::string::npos)
      << skipped;
  EXPECT_NE(skipped.find("ghost on NVIDIA H100 80GB HBM3 at 64x64x64: the family is not known here"),
            std::string::npos)
      << skipped;

  const Bundle b = read_bundle(out);
  ASSERT_EQ(b.entries.size(), 2u);
  for (const auto& e : b.entries) {
    EXPECT_EQ(e.family, "gemm_tiled");
    EXPECT_EQ(e.arch, "sm_90");
    EXPECT_EQ(e.params, t.fast);  // the fastest, not the first stored
    EXPECT_EQ(e.template_hash, builtin(t.families, "gemm_tiled").template_hash);
    EXPECT_GT(e.usage.registers, 0);
    const std::string cubin = b.cubin(e);
    ASSERT_GT(cubin.size(), 4u);
    EXPECT_EQ(cubin.substr(0, 4), std::string("\x7f"
                                              "ELF"));
  }
  EXPECT_EQ(*b.entries[0].median_ms, 1.0);
  EXPECT_EQ(b.entries[0].problem, (ProblemKey{{1000, 1000, 1000}, {}}));
  EXPECT_EQ(*b.entries[1].median_ms, 30.0);

  // Its families load on their own and are the ones tuned.
  const auto bundled = load_families({b.families_dir()});
  ASSERT_EQ(bundled.size(), 2u);  // gemm_tiled and gemm_naive, whose reference kernel it uses
  EXPECT_EQ(find_family(bundled, "gemm_tiled").template_hash,
            builtin(t.families, "gemm_tiled").template_hash);

  // The client's fallbacks, in the bundle.
  Match match;
  const std::string h100 = "NVIDIA H100 80GB HBM3";
  EXPECT_EQ(b.find("gemm_tiled", h100, "sm_90", {{4096, 4096, 4096}, {}}, &match), &b.entries[1]);
  EXPECT_EQ(match, Match::exact);
  EXPECT_EQ(b.find("gemm_tiled", h100, "sm_90", {{3000, 3000, 3000}, {}}, &match), &b.entries[1]);
  EXPECT_EQ(match, Match::nearest_size);
  EXPECT_EQ(b.find("gemm_tiled", "NVIDIA H200", "sm_90", {{900, 900, 900}, {}}, &match), &b.entries[0]);
  EXPECT_EQ(match, Match::same_arch);
  EXPECT_EQ(b.find("gemm_tiled", "NVIDIA A100-SXM4-80GB", "sm_80", {{1000, 1000, 1000}, {}}, &match),
            nullptr);
  EXPECT_EQ(match, Match::not_found);
  EXPECT_EQ(b.find("gemm_naive", h100, "sm_90", {{512, 512, 512}, {}}, &match), nullptr);

  // A second export replaces the bundle whole; filters narrow it.
  const BundleSummary again =
      write_bundle(Store::open(t.db, Store::Mode::read_only), t.families, out, "gemm_tiled", h100, cache);
  EXPECT_EQ(again.entries, 2);
  EXPECT_EQ(again.compiled, 0);  // from the compile cache
  EXPECT_TRUE(again.skipped.empty());
  EXPECT_THROW(write_bundle(Store::open(t.db, Store::Mode::read_only), t.families, out, "gemm_tiled",
                            "NVIDIA A100-SXM4-80GB", cache),
               BundleError);
  EXPECT_EQ(read_bundle(out).entries.size(), 2u);  // a failed export leaves the old bundle
}

TEST(Bundle, TakesTheFastestMeasuredOnTheTemplateAsItIsNow) {
  TunedDatabase t;
  const KernelFamily& gemm = builtin(t.families, "gemm_tiled");
  // An older template's sweep is faster; the one on the template as it is now wins the bundle all the same.
  Params old_params = gemm.default_params();
  old_params["BLOCK_Y"] = 8;
  old_params["TILE_K"] = 8;
  SweepSpec old = spec_for(gemm, t.h100, {{1000, 1000, 1000}, {}});
  old.template_hash = "0000";
  Store::open(t.db).add_sweep(old, {ok_result(old_params, 0.1)});
  const auto out = t.dir.path / "bundle";
  const BundleSummary summary = write_bundle(Store::open(t.db, Store::Mode::read_only), t.families, out,
                                             "gemm_tiled", "", CompileCache(t.dir.path / "cache"));
  EXPECT_EQ(summary.entries, 2);
  EXPECT_TRUE(summary.skipped.empty()) << summary.skipped.front();
  const Bundle b = read_bundle(out);
  EXPECT_EQ(b.entries[0].params, t.fast);
  EXPECT_EQ(*b.entries[0].median_ms, 1.0);
}

TEST(Bundle, AFolderNamedWithASlashIsReplacedWholeAndNothingElseIsWrittenOver) {
  TunedDatabase t;
  const CompileCache cache(t.dir.path / "cache");
  const auto write = [&](const std::filesystem::path& out) {
    return write_bundle(Store::open(t.db, Store::Mode::read_only), t.families, out, "", "", cache);
  };
  const std::string slashed = (t.dir.path / "bundle").string() + "/";
  EXPECT_EQ(write(slashed).entries, 2);
  EXPECT_EQ(write(slashed).entries, 2);  // the second export replaces the first
  EXPECT_EQ(read_bundle(t.dir.path / "bundle").entries.size(), 2u);
  for (const auto& e : std::filesystem::directory_iterator(t.dir.path))
    EXPECT_EQ(e.path().filename().string().find(".tmp."), std::string::npos) << e.path();  // no leftovers
  const auto file = t.dir.path / "empty-file";
  std::ofstream(file).close();
  EXPECT_THROW(write(file), BundleError);
  EXPECT_TRUE(std::filesystem::is_regular_file(file));
  EXPECT_THROW(write("/"), BundleError);
}

// Exporting again over a bundle replaces the folder whole: a file the user put there is refused, not deleted.
TEST(Bundle, ExportingAgainNeverDeletesAFileTheUserPutInTheFolder) {
  TunedDatabase t;
  const CompileCache cache(t.dir.path / "cache");
  const auto out = t.dir.path / "bundle";
  const auto write = [&] {
    return write_bundle(Store::open(t.db, Store::Mode::read_only), t.families, out, "", "", cache);
  };
  ASSERT_EQ(write().entries, 2);
  for (const auto& mine : {out / "notes.txt", out / "cubins" / "mine.txt", out / "families" / "README"}) {
    std::ofstream(mine) << "mine\n";
    try {
      write();
      ADD_FAILURE() << "written over " << mine;
    } catch (const BundleError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("holds " + std::filesystem::relative(mine, out).string() + ", which no export"),
                std::string::npos)
          << what;
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    }
    EXPECT_EQ(tiletune::test::read_bytes(mine), "mine\n");
    EXPECT_EQ(read_bundle(out).entries.size(), 2u);  // the old bundle is whole
    std::filesystem::remove(mine);
  }
  EXPECT_EQ(write().entries, 2);
}

TEST(Bundle, RefusesWhatIsNotOneInOneLine) {
  TunedDatabase t;
  const CompileCache cache(t.dir.path / "cache");
  const auto expect_one_line = [](const auto& call, const std::string& expected) {
    try {
      call();
      ADD_FAILURE() << "no error; expected " << expected;
    } catch (const BundleError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(expected), std::string::npos) << what;
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    }
  };
  // A folder that holds something else is never written over.
  const auto other = t.dir.path / "other";
  std::filesystem::create_directories(other);
  std::ofstream(other / "notes.txt") << "mine\n";
  expect_one_line(
      [&] { write_bundle(Store::open(t.db, Store::Mode::read_only), t.families, other, "", "", cache); },
      "exists and is not a bundle");
  EXPECT_EQ(tiletune::test::read_bytes(other / "notes.txt"), "mine\n");

  expect_one_line([&] { read_bundle(t.dir.path / "nothing"); }, "no ");
  const auto bad = t.dir.path / "bad";
  std::filesystem::create_directories(bad);
  std::ofstream(bad / "manifest.json")
      << "{\"format\": \"tiletune-bundle-1\", \"entries\": [{\"family\": 1}]}";
  expect_one_line([&] { read_bundle(bad); }, "is malformed");
  std::ofstream(bad / "manifest.json") << "[1, 2";
  expect_one_line([&] { read_bundle(bad); }, "is malformed");
  std::ofstream(bad / "manifest.json", std::ios::trunc) << "{\"format\": \"something else\"}";
  expect_one_line([&] { read_bundle(bad); }, "is not a tiletune-bundle-1 manifest");
  std::ofstream(bad / "manifest.json", std::ios::trunc)
      << R"({"format": "tiletune-bundle-1", "entries": [{"family": "gemm_tiled", "device": "d", "arch": "sm_90",
            "size": "8x8x8", "params": {}, "template_hash": "x", "cubin": "../../etc/passwd", "symbol": "k"}]})";
  expect_one_line([&] { read_bundle(bad); }, "bad CUBIN file name");
  // A CUBIN name with a line break (or any control character) is refused too, escaped in the one line.
  std::ofstream(bad / "manifest.json", std::ios::trunc)
      << R"({"format": "tiletune-bundle-1", "entries": [{"family": "gemm_tiled", "device": "d", "arch": "sm_90",
            "size": "8x8x8", "params": {}, "template_hash": "x", "cubin": "k\ng.cubin", "symbol": "k"}]})";
  expect_one_line([&] { read_bundle(bad); }, "bad CUBIN file name 'k\\ng.cubin'");
  // A count that is no whole number, or one too large for its field, is refused, never cast.
  for (const std::string field :
       {R"("sweep": 2.44444e98)", R"("sweep": 1.5)", R"("usage": {"registers": 2e10})",
        R"("usage": {"barriers": 4294967296})", R"("usage": [])"}) {
    std::ofstream(bad / "manifest.json", std::ios::trunc)
        << R"({"format": "tiletune-bundle-1", "entries": [{"family": "gemm_tiled", "device": "d", "arch": "sm_90",
            "size": "8x8x8", "params": {}, "template_hash": "x", "cubin": "k.cubin", "symbol": "k", )"
        << field << "}]}";
    expect_one_line([&] { read_bundle(bad); }, "is malformed");
  }
  std::ofstream(bad / "manifest.json", std::ios::trunc)
      << R"({"format": "tiletune-bundle-1", "entries": [{"family": "gemm_tiled", "device": "d", "arch": "sm_90",
            "size": "8x8x8", "params": {"TILE": 1e30}, "template_hash": "x", "cubin": "k.cubin", "symbol": "k"}]})";
  expect_one_line([&] { read_bundle(bad); }, "params.TILE must be an integer");
  std::ofstream(bad / "manifest.json", std::ios::trunc)
      << std::string("{\"format\": \"tiletune-bundle-1\", \"entries\": []}\0{garbage", 55);
  expect_one_line([&] { read_bundle(bad); }, "holds a NUL byte at offset 46");

  // A bundle's missing CUBIN is named when it is needed.
  const auto out = t.dir.path / "bundle";
  write_bundle(Store::open(t.db, Store::Mode::read_only), t.families, out, "", "", cache);
  Bundle b = read_bundle(out);
  std::filesystem::remove(out / "cubins" / b.entries[0].cubin_file);
  expect_one_line([&] { b.cubin(b.entries[0]); }, "cannot read");
}

TEST(Bundle, TheRuntimeReadsOnlyTheBundle) {
  TunedDatabase t;
  const auto out = t.dir.path / "bundle";
  write_bundle(Store::open(t.db, Store::Mode::read_only), t.families, out, "", "",
               CompileCache(t.dir.path / "cache"));
  runtime::RuntimeOptions options;
  options.database = t.dir.path / "missing.db";
  options.bundle = out;
  runtime::Runtime rt(options);
  const auto refusal = [&](const std::string& family, const std::string& size) -> std::string {
    try {
      rt.kernel(family, size);
    } catch (const runtime::RuntimeError& e) {
      return e.what();
    }
    return "";
  };
  // Only the bundle's families are known (gemm_regtile is built in, not bundled).
  EXPECT_NE(refusal("gemm_regtile", "64x64x64").find("unknown family 'gemm_regtile'"), std::string::npos);
  // A bundled family: with no GPU it says so; with one, it loads. The database is never opened.
  const std::string e = refusal("gemm_tiled", "64x64x64");
  EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  EXPECT_FALSE(std::filesystem::exists(t.dir.path / "missing.db"));

  runtime::RuntimeOptions none;
  none.bundle = t.dir.path / "nowhere";
  runtime::Runtime missing(none);
  try {
    missing.kernel("gemm_tiled", "64x64x64");
    ADD_FAILURE() << "a missing bundle was read";
  } catch (const runtime::RuntimeError& err) {
    EXPECT_NE(std::string(err.what()).find("tiletune export --format bundle"), std::string::npos)
        << err.what();
  }
}

// A family that reads its template from another family's folder ("source_from") and its reference from that
// family's file needs that family in the bundle: its families/ folder loads on its own, as tuned.
TEST(Bundle, CarriesTheFamilyThatHoldsASharedTemplate) {
  TempDir dir;
  const auto families = load_families({test::templates_dir(), test::fixtures_dir() / "families"});
  const KernelFamily& rows = find_family(families, "tma_tile_rows");
  const DeviceLimits h100 = load_profile("h100");
  const auto db = dir.path / "t.db";
  {
    Store store = Store::open(db);
    store.add_sweep(spec_for(rows, h100, {{100, 36}, {}}), {ok_result(rows.default_params(), 0.01)});
  }
  const auto out = dir.path / "bundle";
  const BundleSummary summary = write_bundle(Store::open(db, Store::Mode::read_only), families, out, "", "",
                                             CompileCache(dir.path / "cache"));
  EXPECT_EQ(summary.entries, 1) << (summary.skipped.empty() ? "" : summary.skipped.front());
  const Bundle b = read_bundle(out);
  ASSERT_EQ(b.entries.size(), 1u);
  EXPECT_EQ(b.entries[0].arch, "sm_90");  // the device's, as lookups name it; the CUBIN is sm_90a's
  const auto bundled = load_families({b.families_dir()});
  ASSERT_EQ(bundled.size(), 2u);
  EXPECT_EQ(find_family(bundled, "tma_tile_rows").template_hash, rows.template_hash);
  EXPECT_EQ(find_family(bundled, "tma_tile_rows").source, find_family(families, "tma_tile").source);
  EXPECT_NO_THROW(find_family(bundled, "tma_tile"));
}

// The Hopper tensor-core GEMM families (gemm_bf16_wgmma, gemm_f16_wgmma, gemm_tf32_wgmma), everything that
// runs without a GPU: one template shared by three families, what is pruned and why, the tensor maps and the
// cluster a launch carries, and NVRTC compiling sampled configurations for sm_90a with every register the
// consumers need and no serialised wgmma.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "../test_paths.hpp"
#include "requests.hpp"
#include "tiletune/plan.hpp"

using namespace tiletune;

namespace {

const std::vector<KernelFamily>& builtin() {
  static const auto fams = load_families({tiletune::test::templates_dir()});
  return fams;
}

const char* const kFamilies[] = {"gemm_bf16_wgmma", "gemm_f16_wgmma", "gemm_tf32_wgmma"};

Params with(const KernelFamily& f, const Params& changes) {
  Params p = f.default_params();
  for (const auto& [k, v] : changes) p[k] = v;
  return p;
}

int input_bytes(const KernelFamily& f) { return static_cast<int>(size_of(find_argument(f, "A")->type)); }

// The configuration with the deepest ring that fits, the family's STAGES values from the largest down (the
// ring-depth rule keeps only the two deepest), or the last reason it was pruned.
PlannedConfig deepest_ring(const KernelFamily& f, const DeviceLimits& device, const ProblemKey& p,
                           Params params) {
  PlannedConfig c;
  const auto& depths = std::ranges::find(f.parameters, "STAGES", &Parameter::name)->values;
  for (auto stages = depths.rbegin(); stages != depths.rend(); ++stages) {
    params["STAGES"] = *stages;
    c = prune_before_compile(f, device, p, params);
    if (c.outcome == Outcome::ok) break;
  }
  return c;
}

}  // namespace

TEST(WgmmaFamilies, ShareOneTemplateAndOneReferenceFileCompiledForSm90a) {
  const KernelFamily& bf16 = find_family(builtin(), "gemm_bf16_wgmma");
  std::set<std::string> hashes;
  for (const char* name : kFamilies) {
    const KernelFamily& f = find_family(builtin(), name);
    EXPECT_EQ(f.source, bf16.source) << name;
    EXPECT_EQ(f.reference.kernel.source, bf16.reference.kernel.source) << name;
    EXPECT_EQ(compile_job(f, load_profile("h100"), f.default_params()).arch, "sm_90a") << name;
    hashes.insert(f.template_hash);
  }
  EXPECT_EQ(hashes.size(), 3u) << "each family's sweeps are its own";
  EXPECT_EQ(find_family(builtin(), "gemm_bf16_wgmma").reference.kernel.name, "gemm_abt_reference_bf16");
  EXPECT_EQ(find_family(builtin(), "gemm_f16_wgmma").reference.kernel.name, "gemm_abt_reference_f16");
  EXPECT_EQ(find_family(builtin(), "gemm_tf32_wgmma").reference.kernel.name, "gemm_abt_reference_f32");
}

// The default configuration runs on the H100 at every default size; nothing runs on an A100; K must give rows
// of A and B that start on 16-byte boundaries.
TEST(WgmmaFamilies, RunOnHopperOnlyAndRefuseRowsTmaCannotRead) {
  for (const char* name : kFamilies) {
    const KernelFamily& f = find_family(builtin(), name);
    for (const auto& size : f.default_sizes) {
      const ProblemKey p = f.make_problem(parse_size_text(size), {});
      const auto c = prune_before_compile(f, load_profile("h100"), p, f.default_params());
      EXPECT_EQ(c.outcome, Outcome::ok) << name << " " << size << ": " << c.reason;
      const auto a100 = prune_before_compile(f, load_profile("a100"), p, f.default_params());
      EXPECT_EQ(a100.outcome, Outcome::pruned) << name;
    }
    const int unit = 16 / input_bytes(f);
    EXPECT_NO_THROW(f.make_problem({1000, 1000, 8 * unit}, {}));
    try {
      f.make_problem({1000, 1000, 8 * unit + 1}, {});
      ADD_FAILURE() << name << " accepted a K whose rows are not 16-byte aligned";
    } catch (const FamilyError& e) {
      EXPECT_NE(std::string(e.what()).find("K must be a multiple of " + std::to_string(unit)),
                std::string::npos)
          << e.what();
    }
  }
}

// An N whose rows of C are not 16-byte aligned prunes the TMA-store epilogues, saying why, and leaves the one
// that stores from registers; an aligned N runs all three.
TEST(WgmmaFamilies, UnalignedRowsOfCLeaveTheRegisterEpilogue) {
  const DeviceLimits h100 = load_profile("h100");
  for (const char* name : kFamilies) {
    const KernelFamily& f = find_family(builtin(), name);
    const ProblemKey odd = f.make_problem({1000, 1001, 512}, {});
    const ProblemKey even = f.make_problem({1000, 1024, 512}, {});
    for (std::int64_t epilogue : {0, 1, 2}) {
      const Params params =
          with(f, {{"EPILOGUE", epilogue}, {"STAGES", 2}, {"BN", 128}, {"BK", 128 / input_bytes(f)}});
      const auto at_odd = prune_before_compile(f, h100, odd, params);
      const auto at_even = prune_before_compile(f, h100, even, params);
      if (at_even.reason.find("two deepest") != std::string::npos) continue;  // the ring depth rule, not ours
      EXPECT_EQ(at_even.outcome, Outcome::ok) << name << " EPILOGUE=" << epilogue << ": " << at_even.reason;
      if (epilogue == 0) {
        EXPECT_EQ(at_odd.outcome, Outcome::ok) << name << ": " << at_odd.reason;
      } else {
        EXPECT_EQ(at_odd.outcome, Outcome::pruned) << name;
        EXPECT_NE(at_odd.reason.find("tensor map tma_c"), std::string::npos) << at_odd.reason;
        EXPECT_NE(at_odd.reason.find("multiple of 16"), std::string::npos) << at_odd.reason;
      }
    }
  }
}

// The launch the worker gets for the default configuration at 4096^3 on the H100 with CLUSTER_M 2: A and B
// read in boxes of 128 bytes of K by BM rows and by BN / 2 rows (each block of the cluster loads half of the
// B tile they share) with 128-byte swizzle, C stored in boxes of 128 bytes by BM / CONSUMERS rows, a
// persistent grid of one block per SM, and a cluster of two.
TEST(WgmmaFamilies, LaunchCarriesTheTensorMapsAndTheCluster) {
  const DeviceLimits h100 = load_profile("h100");
  for (const char* name : kFamilies) {
    const KernelFamily& f = find_family(builtin(), name);
    const std::uint64_t es = static_cast<std::uint64_t>(input_bytes(f));
    const ProblemKey p = f.make_problem({4096, 4096, 4096}, {});
    const Params params = with(f, {{"CLUSTER_M", 2}});
    const auto c = prune_before_compile(f, h100, p, params);
    ASSERT_EQ(c.outcome, Outcome::ok) << name << ": " << c.reason;
    const wire::MeasureRequest req = measure_request(f, p, params, c.launch, "k.cubin", MeasureSettings{});
    const std::int64_t BM = params.at("BM"), BN = params.at("BN"), consumers = params.at("CONSUMERS");
    EXPECT_EQ(req.kernel.block[0], 128 * (consumers + 1));
    EXPECT_EQ(req.kernel.cluster, (std::array<std::int64_t, 3>{2, 1, 1}));
    // 132 SMs hold 66 clusters of two; there are more patches of 2 x 1 tiles than that.
    EXPECT_EQ(req.kernel.grid, (std::array<std::int64_t, 3>{132, 1, 1}));
    ASSERT_EQ(req.kernel.args.size(), 9u);
    const auto& a = req.kernel.args[3].tensor_map;
    const auto& b = req.kernel.args[4].tensor_map;
    const auto& cm = req.kernel.args[5].tensor_map;
    EXPECT_EQ(a.buffer, "A");
    EXPECT_EQ(a.dims, (std::vector<std::uint64_t>{4096, 4096}));
    EXPECT_EQ(a.strides, (std::vector<std::uint64_t>{4096 * es}));
    EXPECT_EQ(a.box, (std::vector<std::uint32_t>{static_cast<std::uint32_t>(128 / es),
                                                 static_cast<std::uint32_t>(BM)}));
    EXPECT_EQ(a.swizzle, 128u);
    EXPECT_EQ(a.l2_promotion, 0u);  // no L2 promotion: 256 bytes cost the decode shapes 2 to 4%
    EXPECT_EQ(b.l2_promotion, 0u);
    EXPECT_EQ(b.buffer, "B");
    EXPECT_EQ(b.box, (std::vector<std::uint32_t>{static_cast<std::uint32_t>(128 / es),
                                                 static_cast<std::uint32_t>(BN / 2)}));
    EXPECT_EQ(cm.buffer, "C");
    EXPECT_EQ(cm.box, (std::vector<std::uint32_t>{static_cast<std::uint32_t>(128 / es),
                                                  static_cast<std::uint32_t>(BM / consumers)}));
    EXPECT_EQ(cm.swizzle, 128u);
    const auto type = es == 4                                 ? wire::TensorMapDataType::float32
                      : std::string(name) == "gemm_f16_wgmma" ? wire::TensorMapDataType::float16
                                                              : wire::TensorMapDataType::bfloat16;
    EXPECT_EQ(a.type, type) << name;
    EXPECT_EQ(cm.type, type) << name;
  }
}

// The blocks of a cluster that share a tile load it in slices, one each, multicast into both: with CLUSTER_N
// 2 A's box is half of BM rows, with CLUSTER_M 2 B's is half of BN rows, but where half of BN does not start
// on a 1024-byte swizzle atom (232: 116 rows) the first block loads the whole B tile. With B as K x N, B's
// box (BK rows of 64 columns) is the same either way: the blocks split B's 64-column atoms instead.
TEST(WgmmaFamilies, BlocksOfAClusterLoadSlicesOfTheTilesTheyShare) {
  const DeviceLimits h100 = load_profile("h100");
  auto boxes = [&](const KernelFamily& f, const Params& changes) {
    const ProblemKey p = f.make_problem({4096, 4096, 4096}, {});
    const PlannedConfig c = deepest_ring(f, h100, p, with(f, changes));
    EXPECT_EQ(c.outcome, Outcome::ok) << f.name << " " << params_to_text(c.params) << ": " << c.reason;
    const auto req = measure_request(f, p, c.params, c.launch, "k.cubin", MeasureSettings{});
    return std::pair{req.kernel.args[3].tensor_map.box[1], req.kernel.args[4].tensor_map.box[1]};
  };
  for (const char* name : kFamilies) {
    const KernelFamily& f = find_family(builtin(), name);
    EXPECT_EQ(boxes(f, {{"BM", 128}, {"BN", 256}}), std::pair(128u, 256u)) << name;
    EXPECT_EQ(boxes(f, {{"BM", 128}, {"BN", 256}, {"CLUSTER_N", 2}}), std::pair(64u, 256u)) << name;
    EXPECT_EQ(boxes(f, {{"BM", 128}, {"BN", 192}, {"CLUSTER_M", 2}}), std::pair(128u, 96u)) << name;
    EXPECT_EQ(boxes(f, {{"BM", 128}, {"BN", 232}, {"CLUSTER_M", 2}}), std::pair(128u, 232u)) << name;
  }
  for (const char* name : {"gemm_bf16_wgmma_ab", "gemm_f16_wgmma_ab"}) {
    const KernelFamily& f = find_family(builtin(), name);
    const auto bk = static_cast<std::uint32_t>(f.default_params().at("BK"));
    EXPECT_EQ(boxes(f, {{"BM", 128}, {"BN", 256}, {"CLUSTER_M", 2}}), std::pair(128u, bk)) << name;
    EXPECT_EQ(boxes(f, {{"BM", 256}, {"BN", 128}, {"CLUSTER_N", 2}}), std::pair(128u, bk)) << name;
  }
}

// PERSISTENT 2 launches the fewest blocks that take as many turns as one per SM (512 tiles of 128 x 256 at
// 4096^3: 128 blocks of four, not 132), and is pruned where that is the full grid; ping-pong consumers store
// whole BM-row tiles, and need two consumers on a persistent grid; the Hilbert order takes no GROUP.
TEST(WgmmaFamilies, BalancedGridAndPingPongLaunches) {
  const DeviceLimits h100 = load_profile("h100");
  for (const char* name : kFamilies) {
    const KernelFamily& f = find_family(builtin(), name);
    const ProblemKey big = f.make_problem({4096, 4096, 4096}, {}),
                     small = f.make_problem({1024, 1024, 1024}, {});
    auto deepest = [&](const ProblemKey& p, const Params& params) {
      return deepest_ring(f, h100, p, params);
    };
    auto request = [&](const ProblemKey& p, const Params& params) {
      const PlannedConfig c = deepest(p, params);
      EXPECT_EQ(c.outcome, Outcome::ok) << name << " " << params_to_text(params) << ": " << c.reason;
      return measure_request(f, p, c.params, c.launch, "k.cubin", MeasureSettings{});
    };
    const Params balanced = with(f, {{"PERSISTENT", 2}, {"BM", 128}, {"BN", 256}, {"CONSUMERS", 2}});
    EXPECT_EQ(request(big, balanced).kernel.grid, (std::array<std::int64_t, 3>{128, 1, 1})) << name;
    // 32 tiles at 1024^3 fill no more than one turn: the balanced grid is the full one, and pruned.
    EXPECT_NE(deepest(small, balanced).reason.find("balanced persistent grid"), std::string::npos) << name;
    const Params pp =
        with(f, {{"SCHEDULE", 1}, {"BM", 128}, {"BN", 128}, {"EPILOGUE", 1}, {"PERSISTENT", 1}});
    EXPECT_EQ(request(big, pp).kernel.args[5].tensor_map.box[1], 128u) << name;
    Params one_shot = pp;
    one_shot["PERSISTENT"] = 0;
    EXPECT_NE(deepest(big, one_shot).reason.find("ping-pong"), std::string::npos) << name;
    // The Hilbert order walks every patch: a GROUP beside it would be the same kernel twice.
    EXPECT_NE(deepest(big, with(f, {{"RASTER", 2}, {"GROUP", 8}})).reason.find("Hilbert"), std::string::npos)
        << name;
    EXPECT_EQ(deepest(big, with(f, {{"RASTER", 2}, {"GROUP", 1}})).outcome, Outcome::ok) << name;
  }
}

// BN 32 (one wgmma m64n32) gives a decode shape's 64 rows a block per SM, and a tile that small takes the
// deepest ring, 14 stages of one 128-byte row of k (12 KB each). Its 16-bit C, 64 bytes a row, is narrower
// than the TMA-store epilogues' 128-byte column blocks and is stored from registers; TF32's is one whole
// block.
TEST(WgmmaFamilies, NarrowTilesTakeTheDeepestRingAndStore16BitCFromRegisters) {
  const DeviceLimits h100 = load_profile("h100");
  for (const char* name : kFamilies) {
    const KernelFamily& f = find_family(builtin(), name);
    const ProblemKey decode = f.make_problem({64, 4096, 4096}, {});
    const Params narrow = with(f, {{"BM", 64}, {"BN", 32}, {"CONSUMERS", 1}, {"EPILOGUE", 0}});
    const PlannedConfig c = deepest_ring(f, h100, decode, narrow);
    ASSERT_EQ(c.outcome, Outcome::ok) << name << ": " << c.reason;
    EXPECT_EQ(c.params.at("STAGES"), 14) << name;
    EXPECT_EQ(c.launch.grid[0], 128) << name;  // 4096 / 32 tiles of 64 rows, on an H100's 132 SMs
    Params staged = c.params;
    staged["EPILOGUE"] = 1;
    const PlannedConfig s = prune_before_compile(f, h100, decode, staged);
    if (input_bytes(f) == 2)
      EXPECT_NE(s.reason.find("narrower than 128 bytes of C"), std::string::npos) << name << ": " << s.reason;
    else
      EXPECT_EQ(s.outcome, Outcome::ok) << name << ": " << s.reason;
  }
}

// NVRTC compiles configurations that cover the template's branches (one and two consumers, cooperative and
// ping-pong, clusters along either side, the four epilogues, the deepest tiles, every wgmma width, the
// Hilbert order) for sm_90a: no spills, the register split of two consumers (168 at entry) and no wgmma
// serialised by ptxas.
TEST(WgmmaFamilies, SampledConfigurationsCompileForSm90aWithoutSpillsOrSerialisedWgmma) {
  const DeviceLimits h100 = load_profile("h100");
  const std::vector<Params> samples = {
      {},
      {{"CLUSTER_N", 2}, {"EPILOGUE", 2}, {"BN", 192}, {"STAGES", 5}},
      {{"CONSUMERS", 1}, {"BN", 128}, {"EPILOGUE", 0}, {"PERSISTENT", 0}, {"RASTER", 1}},
      {{"BM", 256}, {"BN", 64}, {"CLUSTER_M", 2}, {"GROUP", 1}},
      {{"SCHEDULE", 1}, {"BN", 128}, {"EPILOGUE", 1}, {"PERSISTENT", 2}},
      {{"SCHEDULE", 1}, {"BM", 64}, {"EPILOGUE", 0}, {"CLUSTER_N", 2}},
      {{"EPILOGUE", 3}},
      {{"RASTER", 2}, {"GROUP", 1}, {"CLUSTER_N", 2}, {"PERSISTENT", 2}},
      // Tile widths that are not whole 128-byte columns of C: the last part column stored from registers.
      {{"BM", 128}, {"BN", 232}, {"EPILOGUE", 2}},
      {{"BM", 128}, {"BN", 232}, {"EPILOGUE", 3}},
      {{"BM", 64}, {"BN", 160}, {"CONSUMERS", 1}, {"EPILOGUE", 1}, {"PERSISTENT", 0}},
      // The narrowest tile (one wgmma m64n32) and, being small, the deepest ring: 14 stages.
      {{"BM", 64}, {"BN", 32}, {"CONSUMERS", 1}, {"EPILOGUE", 0}},
  };
  for (const char* name : kFamilies) {
    const KernelFamily& f = find_family(builtin(), name);
    for (const Params& changes : samples) {
      if (changes.count("EPILOGUE") && changes.at("EPILOGUE") == 3 && input_bytes(f) == 4) continue;
      Params params = with(f, changes);
      const ProblemKey p = f.make_problem({4096, 4096, 4096}, {});
      PlannedConfig c = deepest_ring(f, h100, p, params);
      params = c.params;
      ASSERT_EQ(c.outcome, Outcome::ok) << name << " " << params_to_text(params) << ": " << c.reason;
      const CompileResult r = compile(compile_job(f, h100, params));
      const auto* k = std::get_if<CompiledKernel>(&r);
      ASSERT_NE(k, nullptr) << name << " " << params_to_text(params) << ": "
                            << std::get<CompileError>(r).log.substr(0, 2000);
      EXPECT_EQ(k->usage.spill_stores + k->usage.spill_loads, 0) << name << " " << params_to_text(params);
      if (params.at("CONSUMERS") == 2) {
        EXPECT_EQ(k->usage.registers, 168) << name << " " << params_to_text(params);
      }
      EXPECT_EQ(k->log.find("serialized"), std::string::npos) << k->log;
      EXPECT_EQ(k->log.find("setmaxnreg ignored"), std::string::npos) << k->log;
      apply_compile_result(c, r, h100);
      EXPECT_EQ(c.outcome, Outcome::ok) << name << " " << params_to_text(params) << ": " << c.reason;
    }
  }
}

// The 16-bit C = A B families (B given as K x N): the same template with B_KN = 1, their own reference, B's
// tensor map reading 64 columns by BK rows of the stored rows, N refused where B's rows are not 16-byte
// aligned, and sampled configurations compiling for sm_90a like the A B^T ones.
TEST(WgmmaAbFamilies, ReadBAsStoredAndCompileForSm90a) {
  const DeviceLimits h100 = load_profile("h100");
  const KernelFamily& abt = find_family(builtin(), "gemm_bf16_wgmma");
  std::set<std::string> hashes{abt.template_hash, find_family(builtin(), "gemm_f16_wgmma").template_hash};
  for (const char* name : {"gemm_bf16_wgmma_ab", "gemm_f16_wgmma_ab"}) {
    const KernelFamily& f = find_family(builtin(), name);
    EXPECT_EQ(f.source, abt.source) << name;
    hashes.insert(f.template_hash);
    EXPECT_EQ(f.reference.kernel.name,
              std::string(name) == "gemm_f16_wgmma_ab" ? "gemm_ab_reference_f16" : "gemm_ab_reference_bf16");
    EXPECT_THROW(f.make_problem({1000, 1004, 512}, {}), FamilyError) << name;
    const ProblemKey p = f.make_problem({4096, 4096, 4096}, {});
    const std::vector<Params> samples = {
        {}, {{"CLUSTER_M", 2}, {"BN", 192}}, {{"CONSUMERS", 1}, {"BN", 64}, {"BK", 128}, {"EPILOGUE", 0}}};
    for (const Params& changes : samples) {
      Params params = with(f, changes);
      const PlannedConfig c = deepest_ring(f, h100, p, params);
      params = c.params;
      ASSERT_EQ(c.outcome, Outcome::ok) << name << " " << params_to_text(params) << ": " << c.reason;
      const wire::MeasureRequest req = measure_request(f, p, params, c.launch, "k.cubin", MeasureSettings{});
      const auto& b = req.kernel.args[4].tensor_map;
      EXPECT_EQ(b.buffer, "B");
      EXPECT_EQ(b.dims, (std::vector<std::uint64_t>{4096, 4096}));
      EXPECT_EQ(b.strides, (std::vector<std::uint64_t>{4096 * 2}));
      EXPECT_EQ(b.box, (std::vector<std::uint32_t>{64, static_cast<std::uint32_t>(params.at("BK"))}));
      const CompileResult r = compile(compile_job(f, h100, params));
      const auto* k = std::get_if<CompiledKernel>(&r);
      ASSERT_NE(k, nullptr) << name << " " << params_to_text(params) << ": "
                            << std::get<CompileError>(r).log.substr(0, 2000);
      EXPECT_EQ(k->usage.spill_stores + k->usage.spill_loads, 0) << name << " " << params_to_text(params);
      EXPECT_EQ(k->log.find("serialized"), std::string::npos) << k->log;
    }
  }
  EXPECT_EQ(hashes.size(), 4u) << "each family's sweeps are its own";
}

// Siblings: one template over elements of the same size. The four 16-bit wgmma families (both element types,
// both layouts of B) are each other's; TF32, whose elements are 4 bytes, is nobody's; nor is a family its
// own.
TEST(WgmmaFamilies, SiblingsAreTheSameTemplateOverElementsOfTheSameSize) {
  const auto& all = builtin();
  const std::set<std::string> sixteen = {"gemm_bf16_wgmma", "gemm_f16_wgmma", "gemm_bf16_wgmma_ab",
                                         "gemm_f16_wgmma_ab"};
  for (const auto& name : sixteen) {
    const auto siblings = sibling_families(all, find_family(all, name));
    std::set<std::string> expected = sixteen;
    expected.erase(name);
    EXPECT_EQ(std::set<std::string>(siblings.begin(), siblings.end()), expected) << name;
  }
  EXPECT_TRUE(sibling_families(all, find_family(all, "gemm_tf32_wgmma")).empty());
  EXPECT_TRUE(sibling_families(all, find_family(all, "gemm_regtile")).empty());
  KernelFamily wider = find_family(all, "gemm_bf16_wgmma");
  wider.name = "gemm_bf16_wgmma_copy";
  wider.parameters.pop_back();
  EXPECT_FALSE(are_siblings(wider, find_family(all, "gemm_bf16_wgmma"))) << "another parameter list";
}

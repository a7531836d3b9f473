// The HTML report: every chart drawn with its title, the counts it states, hostile text escaped, the
// selection and its one-line errors. tests/report/browser_check.py looks at the same page in a browser.
#include "tiletune/report.hpp"

#include <gtest/gtest.h>

#include "test_support.hpp"
#include "tiletune/utf8.hpp"

namespace tiletune {
namespace {

using test::failed;
using test::h100;
using test::ok;
using test::spec;

// gemm_tiled as the report sees it: defaults TILE=16, BLOCK_Y=4, and two declared baselines, a family (stored
// below) and a library call (never stored).
const char* const tiled_description =
    R"({"name": "gemm_tiled", "parameters": {"TILE": {"values": [8, 16, 32], "default": 16},
        "BLOCK_Y": {"values": [4, 8]}},
        "baselines": [{"library": "cublas_sgemm", "operands": {}}, "gemm_naive"]})";

SweepSpec tiled(std::vector<std::int64_t> dims) {
  SweepSpec s = spec("gemm_tiled", h100, std::move(dims));
  s.family_json = tiled_description;
  return s;
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t pos = text.find(what); pos != std::string::npos; pos = text.find(what, pos + what.size()))
    ++n;
  return n;
}

// TILE decides the time (x4 per step), BLOCK_Y a little: TILE is the heatmap's first axis. Six ok cells of
// the 3x2 grid but one (TILE=8, BLOCK_Y=8: pruned), plus a compile failure outside the grid.
std::vector<ResultRecord> tiled_results(double scale) {
  std::vector<ResultRecord> r;
  for (const std::int64_t tile : {8, 16, 32})
    for (const std::int64_t block_y : {4, 8}) {
      if (tile == 8 && block_y == 8) continue;
      const double ms = scale * (tile == 32 ? 1.0 : tile == 16 ? 4.0 : 16.0) * (block_y == 8 ? 0.9 : 1.0);
      r.push_back(ok({{"TILE", tile}, {"BLOCK_Y", block_y}}, ms));
    }
  r.push_back(failed({{"TILE", 8}, {"BLOCK_Y", 8}}, Outcome::pruned, "smem 99000 > 49152"));
  r.push_back(failed({{"TILE", 64}, {"BLOCK_Y", 8}}, Outcome::pruned, "smem 99000 > 49152"));
  r.push_back(
      failed({{"TILE", 64}, {"BLOCK_Y", 4}}, Outcome::compile_failed, "ptxas: too many resources\nline 2"));
  return r;
}

struct Filled {
  std::int64_t small = 0, large = 0, naive = 0, plan = 0;
};

Filled fill(Store& store) {
  Filled f;
  f.small = store.add_sweep(tiled({1024, 1024, 1024}), tiled_results(1.0));
  f.large = store.add_sweep(tiled({4096, 4096, 4096}), tiled_results(60.0));
  f.naive = store.add_sweep(spec("gemm_naive", h100, {1024, 1024, 1024}),
                            {ok({{"BLOCK_X", 32}}, 50.0), ok({{"BLOCK_X", 64}}, 40.0)});
  SweepSpec plan = tiled({2048, 2048, 2048});
  plan.kind = "plan";
  ResultRecord planned;
  planned.params = {{"TILE", 16}, {"BLOCK_Y", 4}};
  f.plan = store.add_sweep(plan, {planned});
  return f;
}

std::string render(const std::filesystem::path& db, ReportOptions options = {}) {
  options.generated_at = "2025-01-31T12:00:00.000Z";
  return render_report(db, options);
}

TEST(Report, DrawsEveryChartWithItsTitleAndCounts) {
  test::TempDir dir;
  Filled f;
  {
    Store store = Store::open(dir / "tune.db");
    f = fill(store);
  }
  const std::string html = render(dir / "tune.db");
  const std::string small = std::to_string(f.small), large = std::to_string(f.large);
  ASSERT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.find("</html>"), std::string::npos);
  EXPECT_TRUE(valid_utf8(html));
  // Self-contained: nothing to fetch, and the page says so to the browser.
  EXPECT_EQ(html.find("src="), std::string::npos);
  EXPECT_EQ(html.find("http:"), std::string::npos);
  EXPECT_EQ(html.find("https:"), std::string::npos);
  EXPECT_EQ(html.find("url("), html.find("url(#"));
  EXPECT_NE(html.find("default-src 'none'"), std::string::npos);
  EXPECT_EQ(count(html, "<script>"), 1u);

  // Header: the device and the provenance.
  EXPECT_NE(html.find("Device: NVIDIA H100 80GB HBM3 (sm_90, 132 SMs)"), std::string::npos);
  EXPECT_NE(html.find("<th>SM clock</th><td>1980 MHz</td>"), std::string::npos);
  EXPECT_NE(html.find("generated 2025-01-31T12:00:00.000Z"), std::string::npos);
  EXPECT_NE(html.find("<code>abc123</code>"), std::string::npos);
  for (const std::int64_t id : {f.small, f.large, f.naive, f.plan})
    EXPECT_NE(html.find("id=\"sweep-" + std::to_string(id) + "\""), std::string::npos) << id;

  // One size chart per family on the device, with the tuned line and the stored baseline family's line.
  EXPECT_EQ(count(html, "data-chart=\"size\""), 2u);
  EXPECT_NE(html.find("<h4>Best GFLOP/s vs problem size: gemm_tiled on NVIDIA H100 80GB HBM3</h4>"),
            std::string::npos);
  EXPECT_NE(html.find("<h4>Best GFLOP/s vs problem size: gemm_naive on NVIDIA H100 80GB HBM3</h4>"),
            std::string::npos);
  EXPECT_EQ(count(html, "<polyline"), 3u + 1u);  // gemm_tiled's tuned, default and gemm_naive; gemm_naive's

  // Heatmap: TILE explains the variance, so it is the first axis; the others (none) at the winner's.
  const std::string heatmap_title =
      "<h4>Heatmap: GFLOP/s over TILE \xC3\x97 BLOCK_Y (sweep " + small + ")</h4>";
  EXPECT_EQ(count(html, heatmap_title), 1u);
  EXPECT_NE(html.find("<title>Heatmap: GFLOP/s over TILE \xC3\x97 BLOCK_Y (sweep " + small + ")</title>"),
            std::string::npos);
  // 4 x 2 cells per heatmap of a measured gemm_tiled sweep: TILE=64 is in the sweep but never ok.
  const std::size_t start = html.find("id=\"heatmap-" + small + "\""), end = html.find("</figure>", start);
  const std::string heatmap = html.substr(start, end - start);
  EXPECT_EQ(count(heatmap, "<g><rect"), 8u);
  EXPECT_EQ(count(heatmap, "fill=\"#d0d0d0\""), 4u);  // 3 not ok cells and the legend's
  EXPECT_NE(heatmap.find("TILE=64: compile_failed \xE2\x80\x94 ptxas: too many resources</title>"),
            std::string::npos);
  EXPECT_NE(heatmap.find("BLOCK_Y=8, TILE=32: 2222 GFLOP/s, 0.900 ms"), std::string::npos);
  EXPECT_EQ(count(heatmap, "stroke=\"#e31a1c\" stroke-width=\"3\""),
            2u);                                          // the winner's cell and the legend's
  EXPECT_EQ(heatmap.find("<select"), std::string::npos);  // one pair: nothing to choose

  // Distribution: every ok time, the winner and the stored baselines; the library baseline named as not
  // stored.
  const std::string distribution =
      "<h4>Distribution: median times of 5 ok configurations (sweep " + small + ")</h4>";
  EXPECT_NE(html.find(distribution), std::string::npos);
  const std::size_t d = html.find(distribution), d_end = html.find("</figure>", d);
  const std::string dist = html.substr(d, d_end - d);
  EXPECT_NE(dist.find(">best 0.900 ms</text>"), std::string::npos);
  EXPECT_NE(dist.find(">default (BLOCK_Y=4, TILE=16) 4.00 ms (4.44\xC3\x97)</text>"), std::string::npos);
  EXPECT_NE(dist.find(">gemm_naive (best stored) 40.0 ms (44.4\xC3\x97)</text>"), std::string::npos);
  EXPECT_NE(dist.find("cublas_sgemm (a library call"), std::string::npos);
  EXPECT_NE(dist.find("log axis"), std::string::npos);  // 0.9 to 40 ms
  // The 4096 sweep has no gemm_naive result at its size: named as not stored.
  EXPECT_NE(html.find("gemm_naive (no stored result for this device and problem)"), std::string::npos);

  // Outcomes with counts and the most frequent reasons first.
  EXPECT_NE(html.find("<h4>Outcomes: 8 configurations (sweep " + small + ")</h4>"), std::string::npos);
  const std::size_t pruned =
      html.find("<tr class=\"tt-outcome-pruned\"><td>pruned</td><td class=\"tt-num\">2</td>");
  ASSERT_NE(pruned, std::string::npos);
  EXPECT_LT(html.find("2\xC3\x97 <code>smem 99000 &gt; 49152</code>", pruned), html.find("</tr>", pruned));
  EXPECT_NE(html.find("<td>ok</td><td class=\"tt-num\">5</td>"), std::string::npos);
  EXPECT_NE(html.find("1\xC3\x97 <code>ptxas: too many resources</code>"), std::string::npos);

  // A plan has no times: both charts say so instead of drawing nothing.
  EXPECT_EQ(count(html, "a plan: nothing was measured"),
            4u);  // heatmap and distribution, each svg title and text
}

// Every text from the database is escaped; invalid UTF-8 and control characters cannot reach the page.
TEST(Report, EscapesHostileText) {
  test::TempDir dir;
  const DeviceRecord hostile =
      test::device("<script>alert(1)</script> \"GPU\" & 'co' \xff\xfe\x01", "GPU-<x>", "sm_<90>");
  SweepSpec s = spec("gemm_tiled", hostile, {64, 64, 64});
  s.family_json = R"({"baselines": ["<img src=x onerror=alert(2)>"]})";
  s.git_sha = "</code><b>sha";
  {
    Store store = Store::open(dir / "tune.db");
    store.add_sweep(s, {ok({{"TILE", 16}, {"BLOCK_Y", 4}}, 1.0), ok({{"TILE", 32}, {"BLOCK_Y", 8}}, 2.0),
                        failed({{"TILE", 8}, {"BLOCK_Y", 8}}, Outcome::runtime_failed,
                               "</td></tr><script>alert(3)</script>\xc3")});
  }
  const std::string html = render(dir / "tune.db");
  EXPECT_TRUE(valid_utf8(html));
  EXPECT_EQ(count(html, "<script"), 1u);  // the page's own
  EXPECT_EQ(html.find("<img"), std::string::npos);
  EXPECT_EQ(html.find("<b>sha"), std::string::npos);
  EXPECT_EQ(html.find("<x>"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;alert(1)&lt;/script&gt; &quot;GPU&quot; &amp; &#39;co&#39; "
                      "\xEF\xBF\xBD\xEF\xBF\xBD\\x01"),
            std::string::npos);
  EXPECT_NE(html.find("&lt;/td&gt;&lt;/tr&gt;&lt;script&gt;alert(3)&lt;/script&gt;\xEF\xBF\xBD"),
            std::string::npos);
  EXPECT_NE(html.find("&lt;img src=x onerror=alert(2)&gt; (no stored result"), std::string::npos);
  EXPECT_NE(html.find("&lt;/code&gt;&lt;b&gt;sha"), std::string::npos);
}

TEST(Report, DefaultPairExplainsMostVarianceAndTheOthersAreOffered) {
  test::TempDir dir;
  // C decides the time, A a little, B hardly; the description lists them C, B, A.
  std::vector<ResultRecord> results;
  for (const std::int64_t a : {1, 2})
    for (const std::int64_t b : {1, 2, 3})
      for (const std::int64_t c : {1, 2, 4, 8}) {
        const double b_factor = b == 3 ? 1.01 : b == 2 ? 1.005 : 1.0;
        results.push_back(ok({{"A", a}, {"B", b}, {"C", c}}, 1.0 * c * (a == 2 ? 1.5 : 1.0) * b_factor));
      }
  SweepSpec three = spec("three", h100, {100});
  three.family_json = R"({"parameters": {"C": {"values": [1, 2, 4, 8]}, "B": {"values": [1, 2, 3]},
                                         "A": {"values": [1, 2]}}})";
  std::int64_t id = 0;
  {
    Store store = Store::open(dir / "tune.db");
    id = store.add_sweep(three, results);
  }
  const std::string html = render(dir / "tune.db");
  const std::string sweep = " (sweep " + std::to_string(id) + ")";
  // Pairs by the variance they explain: C and A, C and B, B and A, each drawn in the description's order. The
  // default view shows the first with B at the winner's value; the others are hidden until picked.
  const std::string first = "<div class=\"tt-view\"><h4>Heatmap: GFLOP/s over C \xC3\x97 A" + sweep + "</h4>";
  EXPECT_NE(html.find(first + "<p class=\"tt-sub\">others at the winner's: B=1</p>"), std::string::npos);
  const std::size_t second =
      html.find("<div class=\"tt-view\" hidden><h4>Heatmap: GFLOP/s over C \xC3\x97 B" + sweep);
  const std::size_t third =
      html.find("<div class=\"tt-view\" hidden><h4>Heatmap: GFLOP/s over B \xC3\x97 A" + sweep);
  EXPECT_LT(html.find(first), second);
  EXPECT_LT(second, third);
  EXPECT_NE(third, std::string::npos);
  EXPECT_NE(html.find("<label class=\"tt-pick tt-off\">"), std::string::npos);
  EXPECT_EQ(count(html, "<option value="), 3u);
  EXPECT_EQ(count(html, "data-chart=\"heatmap\""), 3u);
}

TEST(Report, SelectsSweepsAndFailsWithOneLine) {
  test::TempDir dir;
  Filled f;
  {
    Store store = Store::open(dir / "tune.db");
    f = fill(store);
  }
  ReportOptions only;
  only.sweep_ids = {f.large};
  const std::string html = render(dir / "tune.db", only);
  EXPECT_NE(html.find("id=\"sweep-" + std::to_string(f.large) + "\""), std::string::npos);
  EXPECT_EQ(html.find("id=\"sweep-" + std::to_string(f.small) + "\""), std::string::npos);
  EXPECT_EQ(html.find("gemm_naive on"), std::string::npos);

  ReportOptions naive;
  naive.family = "gemm_naive";
  EXPECT_EQ(count(render(dir / "tune.db", naive), "class=\"tt-sweep\""), 1u);

  const auto error = [&](ReportOptions options) {
    try {
      (void)render(dir / "tune.db", options);
    } catch (const StoreError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  ReportOptions bad;
  bad.family = "nope\nsecond";
  EXPECT_EQ(error(bad).rfind("unknown family 'nope\\nsecond' in ", 0), 0u) << error(bad);
  EXPECT_NE(error(bad).find("(it has: 'gemm_naive', 'gemm_tiled')"), std::string::npos) << error(bad);
  bad = {};
  bad.device_name = "RTX";
  EXPECT_NE(error(bad).find("no device named 'RTX'"), std::string::npos) << error(bad);
  bad = {};
  bad.sweep_ids = {999};
  EXPECT_EQ(error(bad).rfind("no sweep 999 in ", 0), 0u) << error(bad);
  bad.sweep_ids = {f.naive};
  bad.family = "gemm_tiled";
  EXPECT_EQ(error(bad), "sweep " + std::to_string(f.naive) + " is of family 'gemm_naive', not 'gemm_tiled'");
  EXPECT_TRUE(test::one_line(error(bad))) << error(bad);

  { Store empty = Store::open(dir / "empty.db"); }
  try {
    (void)render(dir / "empty.db");
    FAIL() << "an empty database has nothing to report";
  } catch (const StoreError& e) {
    EXPECT_EQ(std::string(e.what()), "no sweeps in " + (dir / "empty.db").string());
  }
  EXPECT_THROW((void)render(dir / "missing.db"), StoreError);
}

}  // namespace
}  // namespace tiletune

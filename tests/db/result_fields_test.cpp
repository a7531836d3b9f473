// The result-field table: every field it lists reaches the store, the JSON and CSV exports and imports and
// (where it names one) the T4 measurements, so a field added to the table is carried everywhere or this
// fails.
#include "tiletune/result_fields.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>

#include "test_support.hpp"

using namespace tiletune;
using namespace tiletune::test;

namespace {

// Every field set, each to its own value (within what an import accepts).
ResultRecord every_field_set() {
  ResultRecord r = ok({{"TILE", 16}, {"BLOCK_Y", 4}}, 2.0);
  r.times_ms = {2.0, 2.1};
  int k = 0;
  for (const ResultField& f : result_fields()) {
    ++k;
    if (f.type == ResultField::Type::integer) r.*f.integer = 100 + k;
    if (f.type == ResultField::Type::real) r.*f.real = 0.5 + 0.001 * k;
    if (f.type == ResultField::Type::text) r.*f.text = std::string("text-") + f.name;
  }
  r.min_ms = 0.25;  // at most the median
  return r;
}

void expect_every_field(const ResultRecord& got, const ResultRecord& want, const std::string& via) {
  for (const ResultField& f : result_fields()) {
    if (f.type == ResultField::Type::integer) {
      EXPECT_EQ(got.*f.integer, want.*f.integer) << f.name << " via " << via;
    }
    if (f.type == ResultField::Type::real) {
      ASSERT_TRUE((got.*f.real).has_value()) << f.name << " via " << via;
      EXPECT_DOUBLE_EQ(*(got.*f.real), *(want.*f.real)) << f.name << " via " << via;
    }
    if (f.type == ResultField::Type::text) {
      EXPECT_EQ(got.*f.text, want.*f.text) << f.name << " via " << via;
    }
  }
}

ResultRecord only_result(const Store& store) {
  const auto sweeps = store.sweeps();
  EXPECT_EQ(sweeps.size(), 1u);
  const auto results = store.results(sweeps.at(0).id);
  EXPECT_EQ(results.size(), 1u);
  return results.at(0).record;
}

}  // namespace

TEST(ResultFields, NamesAreDistinctAndEachHasItsMember) {
  std::set<std::string> names;
  for (const ResultField& f : result_fields()) {
    EXPECT_TRUE(names.insert(f.name).second) << f.name;
    const int members = (f.integer != nullptr) + (f.real != nullptr) + (f.text != nullptr);
    EXPECT_EQ(members, 1) << f.name;
  }
}

TEST(ResultFields, EveryFieldSurvivesTheStoreJsonCsvAndReachesT4) {
  TempDir dir;
  const ResultRecord want = every_field_set();
  Store source = Store::open(dir / "source.db");
  source.add_sweep(spec("gemm_tiled", h100, {512, 512, 512}), {want});
  expect_every_field(only_result(source), want, "the store");

  Store from_json = Store::open(dir / "json.db");
  from_json.import_json(source.export_json());
  expect_every_field(only_result(from_json), want, "JSON");

  std::ostringstream csv;
  source.export_csv(csv);
  Store from_csv = Store::open(dir / "csv.db");
  from_csv.import_csv(csv.str());
  expect_every_field(only_result(from_csv), want, "CSV");

  std::ostringstream t4;
  source.export_t4(t4);
  const auto doc = nlohmann::json::parse(t4.str());
  std::set<std::string> measured;
  for (const auto& m : doc.at("results").at(0).at("measurements")) measured.insert(m.at("name"));
  for (const ResultField& f : result_fields())
    if (f.t4_name) {
      EXPECT_TRUE(measured.count(f.t4_name)) << f.name << " as " << f.t4_name;
    }
}

#include <iostream>

#include "cli.hpp"
#include "tiletune/import_check.hpp"
#include "tiletune/store.hpp"

namespace tiletune::cli {

namespace {

std::vector<std::string> counts_row(const Store::MergeCounts& c) {
  return {c.input, std::to_string(c.sweeps_added), std::to_string(c.sweeps_skipped),
          std::to_string(c.sweeps_conflicting), std::to_string(c.results_added)};
}

}  // namespace

int cmd_merge(const std::vector<std::string>& argv) {
  std::vector<std::string> inputs;
  std::string output;
  Common c;
  po::options_description desc("options");
  desc.add_options()("input", po::value(&inputs)->multitoken(), "tiletune databases to merge (positional)")(
      "output,o", po::value(&output), "the database to merge into (created if missing, else added to)")(
      "templates", po::value(&c.templates)->composing(),
      "extra folder of kernel families, whose plans the merged ok results are held to (repeatable)");
  po::positional_options_description pos;
  pos.add("input", -1);
  if (!parse(
          "merge",
          "tiletune merge A.db B.db ... -o ALL.db: adds every sweep of every input to the output, in one\n"
          "transaction (a failure leaves the output as it was); inputs are only read. A sweep already there\n"
          "(same uid, same results) is skipped. Two copies of a sweep that differ are a conflict: where one\n"
          "holds every result of the other and more (a copy taken while it ran), the more complete one is\n"
          "kept; otherwise the copy stored first. A sweep on a device that the output stores with another\n"
          "name, architecture or SM count is skipped. Each conflict is one line on standard error. An ok\n"
          "result that its family's plan for that device and problem prunes is stored as pruned.",
          desc, argv, &pos))
    return 0;
  if (inputs.empty())
    throw UsageError("merge: give the databases to merge (tiletune merge A.db B.db -o ALL.db)");
  if (output.empty()) throw UsageError("merge: give the database to merge into with -o ALL.db");
  const std::vector<std::filesystem::path> paths(inputs.begin(), inputs.end());
  const std::vector<KernelFamily> known = families(c);
  const auto unchecked = std::make_shared<UncheckedImports>();
  Store::MergeSummary s;
  try {
    s = Store::merge(paths, output, std::cerr, import_plan_check(known, unchecked));
  } catch (const StoreError& e) {
    std::string why = e.what();
    if (why.rfind("merge: ", 0) == 0) why.erase(0, 7);
    throw std::runtime_error(why);
  }

  std::cout << "merged " << inputs.size() << (inputs.size() == 1 ? " database" : " databases") << " into "
            << output << "\n";
  std::vector<std::vector<std::string>> rows;
  for (const Store::MergeCounts& c : s.inputs) rows.push_back(counts_row(c));
  rows.push_back(counts_row(s.total));
  print_table(std::cout, {"input", "sweeps added", "skipped (present)", "conflicting", "results added"},
              rows);
  if (s.shard_groups > 0)
    std::cout << s.shard_groups << " (family, device, problem) "
              << (s.shard_groups == 1 ? "group is" : "groups are")
              << " measured in several sweeps (shards; query takes the best over them)\n";
  if (s.total.sweeps_conflicting > 0)
    std::cout << s.total.sweeps_conflicting
              << (s.total.sweeps_conflicting == 1 ? " conflicting sweep" : " conflicting sweeps")
              << " skipped (one 'conflict:' line each on standard error)\n";
  if (const std::string line = unchecked_imports_line(*unchecked); !line.empty()) std::cout << line << "\n";
  return 0;
}

}  // namespace tiletune::cli

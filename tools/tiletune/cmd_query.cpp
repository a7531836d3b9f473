#include <iostream>
#include <nlohmann/json.hpp>

#include "cli.hpp"
#include "tiletune/client.hpp"
#include "tiletune/utf8.hpp"

namespace tiletune::cli {

int cmd_query(const std::vector<std::string>& argv) {
  Common c;
  std::string device_name, arch;
  po::options_description desc("options");
  add_common(desc, c, false, true);
  desc.add_options()("device", po::value(&device_name),
                     "device name as the driver reports it (default: GPU --gpu, if present)")(
      "arch", po::value(&arch), "architecture for the same-architecture fallback, e.g. sm_90")("json",
                                                                                               "print JSON");
  if (!parse("query",
             "Prints the best stored configuration for a family, device and problem. When that exact problem "
             "was not\n"
             "tuned it falls back to the nearest tuned size on the device, then to the same architecture, "
             "then to\n"
             "the family's defaults, and says which.",
             desc, argv))
    return 0;
  po::variables_map vm;
  po::store(po::command_line_parser(argv).options(desc).run(), vm);
  if (c.family.empty()) throw UsageError("query: give --family");
  if (c.size.empty()) throw UsageError("query: give --size");
  if (device_name.empty()) {
    std::string why;
    for (const auto& d : present_devices(&why))
      if (d.ordinal == c.gpu) {
        device_name = d.name;
        if (arch.empty()) arch = d.arch();
      }
    if (device_name.empty()) throw UsageError("query: give --device (" + why + ")");
  }
  std::string error;
  auto client = Client::open(c.db, &error);
  if (!client) throw std::runtime_error(error);
  Query q;
  q.family = c.family;
  q.device_name = device_name;
  q.arch = arch;
  q.problem.dims = parse_size(c.size);
  q.problem.args = parse_args(c.args);
  // Problem arguments the user left out take the family's defaults, as they did when it was tuned.
  try {
    const auto fams = families(c);
    for (const auto& f : fams)
      if (f.name == c.family) q.problem = f.make_problem(q.problem.dims, q.problem.args);
  } catch (const FamilyError& e) {
    throw UsageError(std::string("query: ") + e.what());
  }
  const Lookup r = client->best(q);
  if (vm.count("json")) {
    nlohmann::json j = {{"family", c.family},          {"device", device_name}, {"problem", q.problem.text()},
                        {"match", to_string(r.match)}, {"params", r.params},    {"message", r.message}};
    if (r.match != Match::not_found) {
      j["tuned_on"] = r.device_name;
      j["tuned_problem"] = r.problem.text();
    }
    if (r.median_ms) j["median_ms"] = *r.median_ms;
    if (r.metric) j["metric"] = *r.metric, j["metric_unit"] = r.metric_unit;
    std::cout << j.dump(1) << "\n";
  } else {
    std::cout << params_to_text(r.params) << "\n" << printable_line(r.message) << "\n";
    if (r.median_ms)
      std::cout << "median " << fmt(*r.median_ms, 4) << " ms"
                << (r.metric ? ", " + fmt(*r.metric, 1) + " " + r.metric_unit : "") << "\n";
  }
  return r.match == Match::not_found ? 3 : 0;
}

}  // namespace tiletune::cli

#include <iostream>

#include "cli.hpp"
#include "tiletune/report.hpp"

namespace tiletune::cli {

int cmd_report(const std::vector<std::string>& argv) {
  std::string db = "tiletune.db", output;
  ReportOptions options;
  po::options_description desc("options");
  desc.add_options()("db", po::value(&db)->default_value(db), "SQLite database (opened read-only)")(
      "family,f", po::value(&options.family), "only this kernel family")(
      "device", po::value(&options.device_name), "only this device name")(
      "sweep", po::value(&options.sweep_ids)->multitoken()->composing(),
      "only these sweep ids (repeatable; see 'tiletune show --list')")("output,o", po::value(&output),
                                                                       "the HTML file to write");
  if (!parse(
          "report",
          "Writes one self-contained HTML file (inline SVG, no network, no server) of the stored sweeps: "
          "per\n"
          "device and family the best metric against problem size; per sweep a heatmap of the metric over "
          "two\n"
          "parameters, the distribution of its times with the winner and the stored baselines, its outcomes\n"
          "with their reasons, and its provenance.",
          desc, argv))
    return 0;
  if (output.empty())
    throw UsageError("report: give the HTML file to write with -o (see 'tiletune report --help')");
  check_output_path(output, "report: --output", db);
  const std::string html = render_report(db, options);
  write_file_replacing(output, html);
  std::cerr << "wrote " << output << "\n";
  return 0;
}

}  // namespace tiletune::cli

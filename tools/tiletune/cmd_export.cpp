#include <fstream>
#include <iostream>
#include <sstream>

#include "cli.hpp"
#include "tiletune/store.hpp"

namespace tiletune::cli {

int cmd_export(const std::vector<std::string>& argv) {
  Common c;
  std::string format = "json", output, device;
  po::options_description desc("options");
  add_common(desc, c, false, false);
  desc.add_options()("format", po::value(&format)->default_value(format),
                     "json, csv or header (a C++ header of the best configurations)")(
      "output,o", po::value(&output), "file to write (default: standard output)")(
      "device", po::value(&device), "only this device name");
  if (!parse("export", "Writes stored results as JSON (for import elsewhere), CSV, or a C++ header.", desc,
             argv))
    return 0;
  if (format != "json" && format != "csv" && format != "header")
    throw UsageError("export: --format must be json, csv or header");
  if (!output.empty()) check_output_path(output, "export: --output", c.db);
  const Store store = Store::open(c.db, Store::Mode::read_only);
  std::ostringstream text;
  if (format == "json")
    text << store.export_json(c.family, device) << "\n";
  else if (format == "csv")
    store.export_csv(text, c.family, device);
  else
    store.export_header(text, c.family, device);
  if (output.empty()) {
    std::cout << text.str();
    return 0;
  }
  write_file_replacing(output, text.str());
  std::cerr << "wrote " << output << "\n";
  return 0;
}

int cmd_import(const std::vector<std::string>& argv) {
  Common c;
  std::string input;
  po::options_description desc("options");
  add_common(desc, c, false, false);
  desc.add_options()("input,i", po::value(&input), "JSON file written by 'tiletune export'");
  po::positional_options_description pos;
  pos.add("input", 1);
  if (!parse("import",
             "Reads results exported as JSON into the database. Sweeps already present are skipped; a\n"
             "malformed file changes nothing.",
             desc, argv, &pos))
    return 0;
  if (input.empty()) throw UsageError("import: give the JSON file to read");
  std::ifstream in(input, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + input);
  std::ostringstream text;
  text << in.rdbuf();
  Store store = Store::open(c.db);
  ImportSummary s;
  try {
    s = store.import_json(text.str());
  } catch (const StoreError& e) {
    std::string why = e.what();
    if (why.rfind("import: ", 0) == 0) why.erase(0, 8);
    throw std::runtime_error(input + ": " + why + " (nothing imported)");
  }
  std::cout << "imported " << s.sweeps_added << " sweeps (" << s.results_added << " results), skipped "
            << s.sweeps_skipped << " already present\n";
  return 0;
}

}  // namespace tiletune::cli

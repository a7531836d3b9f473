#include <algorithm>
#include <filesystem>
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

namespace {

// A JSON export starts with '{' (after a byte order mark and white space); anything else is read as CSV.
std::string format_of(const std::string& text) {
  std::size_t i = text.compare(0, 3, "\xEF\xBB\xBF") == 0 ? 3 : 0;
  i = std::min(text.find_first_not_of(" \t\r\n", i), text.size());
  return i < text.size() && text[i] == '{' ? "json" : "csv";
}

}  // namespace

int cmd_import(const std::vector<std::string>& argv) {
  Common c;
  std::string input, format;
  po::options_description desc("options");
  add_common(desc, c, false, false);
  desc.add_options()("input,i", po::value(&input), "JSON or CSV file written by 'tiletune export'")(
      "format", po::value(&format), "json or csv (default: by content; a JSON export starts with '{')");
  po::positional_options_description pos;
  pos.add("input", 1);
  if (!parse(
          "import",
          "Reads results exported as JSON or CSV into the database. Sweeps already present are skipped; a\n"
          "malformed file changes nothing.",
          desc, argv, &pos))
    return 0;
  if (input.empty()) throw UsageError("import: give the JSON or CSV file to read");
  if (!format.empty() && format != "json" && format != "csv")
    throw UsageError("import: --format must be json or csv");
  std::error_code ec;
  if (std::filesystem::is_directory(input, ec))
    throw std::runtime_error("cannot read " + input + ": a directory");
  std::ifstream in(input, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + input);
  // A CSV import holds at most CsvImportLimits::max_bytes: reading stops past that, whatever the file's size.
  const std::size_t csv_limit = CsvImportLimits{}.max_bytes;
  std::string text;
  std::vector<char> buffer(std::size_t{1} << 16);
  while (in) {
    in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    text.append(buffer.data(), static_cast<std::size_t>(in.gcount()));
    if (text.size() > csv_limit && (format.empty() ? format_of(text) : format) == "csv") break;
  }
  if (in.bad()) throw std::runtime_error("cannot read " + input);
  if (format.empty()) format = format_of(text);
  if (format == "csv" && text.size() > csv_limit)
    throw std::runtime_error(input + ": more than " + std::to_string(csv_limit) +
                             " bytes, more than a CSV import reads (nothing imported)");
  Store store = Store::open(c.db);
  ImportSummary s;
  try {
    s = format == "csv" ? store.import_csv(text) : store.import_json(text);
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

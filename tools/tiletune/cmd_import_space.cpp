#include <iostream>

#include "cli.hpp"
#include "tiletune/plan.hpp"
#include "tiletune/t1.hpp"

namespace tiletune::cli {

int cmd_import_space(const std::vector<std::string>& argv) {
  std::string input, output, name;
  po::options_description desc("options");
  desc.add_options()("input", po::value(&input), "the T1 file (positional)")(
      "output,o", po::value(&output), "the templates folder to write the family's folder into")(
      "name", po::value(&name), "the family's name (default: the T1 BenchmarkName or KernelName)")(
      "force", "replace the family.json and kernel file of an existing family folder");
  po::positional_options_description pos;
  pos.add("input", 1);
  if (!parse(
          "import-space",
          "tiletune import-space T1.json -o DIR: turns a tuning space described in the T1 format (as Kernel "
          "Tuner reads it)\n"
          "into the family folder DIR/NAME (family.json and a copy of the kernel), for 'tiletune plan "
          "--templates DIR'.\n"
          "T1 has no reference kernel: the family's default configuration is the truth that the others are "
          "compared with.",
          desc, argv, &pos))
    return 0;
  po::variables_map vm;
  po::store(po::command_line_parser(argv).options(desc).positional(pos).run(), vm);
  if (input.empty()) throw UsageError("import-space: give the T1 file (see 'tiletune import-space --help')");
  if (output.empty()) throw UsageError("import-space: give -o DIR, the templates folder to write into");
  const T1Family t1 = read_t1(input, name);
  const auto folder = write_t1_family(t1, output, vm.count("force") > 0);

  const auto families = load_families({folder});
  const KernelFamily& family = families.front();
  std::cout << "imported " << family.name << " from " << input << " into " << folder.string() << ": "
            << describe_space(family) << ", " << family.constraints.size() << " condition"
            << (family.constraints.size() == 1 ? "" : "s") << ", kernel " << family.kernel << " in "
            << family.source_file << "\n"
            << "the default configuration (" << params_to_text(family.default_params())
            << ") is the reference: every other configuration is compared with it\n";
  const auto size = space_size(family);
  if (size && *size <= kMaxSpaceSize)
    std::cout << "plan it: tiletune plan --templates " << output << " --family " << family.name
              << " --device-profile h100\n";
  else
    std::cout << "its space is larger than a plan holds (" << kMaxSpaceSize << "); sample it: tiletune sweep "
              << "--templates " << output << " --family " << family.name << " --strategy random --budget N\n";
  return 0;
}

}  // namespace tiletune::cli

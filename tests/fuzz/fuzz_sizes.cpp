// libFuzzer target: the size and argument texts of the command line and the database. The input goes through
// the command line's --size parser (which accepts 2^28 and hands over to tiletune::parse_size_text) and its
// --arg parser, and through parse_size_text, parse_args_text and params_from_text themselves. What parses
// must print back to text that parses to the same values (a failed round trip aborts: it is a finding).
#include <cstdio>
#include <cstdlib>
#include <string>

#include "cli.hpp"
#include "fuzz_support.hpp"
#include "tiletune/records.hpp"

using tiletune::fuzz::unexpected_exception;

namespace {

[[noreturn]] void round_trip_failed(const char* what, const std::string& input, const std::string& printed) {
  std::fprintf(stderr, "%s: '%s' printed as '%s' does not read back the same\n", what, input.c_str(),
               printed.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text = tiletune::fuzz::text_of(data, size);
  try {
    tiletune::ProblemKey key;
    key.dims = tiletune::parse_size_text(text);
    const std::string printed = key.size_text();
    if (tiletune::parse_size_text(printed) != key.dims) round_trip_failed("parse_size_text", text, printed);
  } catch (const std::invalid_argument&) {
  } catch (const std::exception& e) {
    unexpected_exception("parse_size_text", e);
  }
  try {
    tiletune::ProblemKey key;
    key.args = tiletune::parse_args_text(text);
    const std::string printed = key.args_text();
    if (tiletune::parse_args_text(printed) != key.args) round_trip_failed("parse_args_text", text, printed);
  } catch (const std::invalid_argument&) {
  } catch (const std::exception& e) {
    unexpected_exception("parse_args_text", e);
  }
  try {
    const tiletune::Params params = tiletune::params_from_text(text);
    const std::string printed = tiletune::params_to_text(params);
    if (tiletune::params_from_text(printed) != params) round_trip_failed("params_from_text", text, printed);
  } catch (const std::invalid_argument&) {
  } catch (const std::exception& e) {
    unexpected_exception("params_from_text", e);
  }
  try {
    (void)tiletune::outcome_from_string(text);
  } catch (const std::exception& e) {
    unexpected_exception("outcome_from_string", e);
  }
  // The command line: --size TEXT and --arg TEXT (the text split at '\n' into repeated --arg options).
  try {
    (void)tiletune::cli::parse_size(text);
  } catch (const tiletune::cli::UsageError&) {
  } catch (const std::exception& e) {
    unexpected_exception("cli::parse_size", e);
  }
  try {
    std::vector<std::string> args;
    std::size_t start = 0;
    while (start <= text.size()) {
      const std::size_t end = std::min(text.find('\n', start), text.size());
      args.push_back(text.substr(start, end - start));
      start = end + 1;
    }
    (void)tiletune::cli::parse_args(args);
  } catch (const tiletune::cli::UsageError&) {
  } catch (const std::exception& e) {
    unexpected_exception("cli::parse_args", e);
  }
  return 0;
}

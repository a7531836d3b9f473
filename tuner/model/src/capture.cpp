#include "tiletune/capture.hpp"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tiletune/family.hpp"
#include "tiletune/records.hpp"

namespace tiletune {
namespace {

using nlohmann::json;

// A line as JSON; null where it is not JSON, or nested deeper than a capture line ever is (a parser's stack
// is not for hostile files to spend).
json parse_json(const std::string& text) {
  if (std::count(text.begin(), text.end(), '[') + std::count(text.begin(), text.end(), '{') > 16)
    return nullptr;
  try {
    return json::parse(text);
  } catch (const json::exception&) {
    return nullptr;
  }
}

// A name from the file as an error shows it: one short line.
std::string shown(const std::string& name) {
  std::string out = name.substr(0, 64);
  for (char& c : out)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  return out;
}

// "inputs": buffer names to paths relative to the capture file's folder.
std::map<std::string, std::string> parse_inputs(const std::string& where, const json& j) {
  std::map<std::string, std::string> out;
  if (!j.contains("inputs")) return out;
  if (!j.at("inputs").is_object()) throw CaptureError(where + ": field 'inputs' must be an object");
  for (const auto& [name, value] : j.at("inputs").items()) {
    const std::string field = where + ": field 'inputs." + shown(name) + "'";
    if (name.empty()) throw CaptureError(where + ": field 'inputs' names an empty buffer");
    if (!value.is_string() || value.get<std::string>().empty())
      throw CaptureError(field + " must be a non-empty path");
    if (std::filesystem::path(value.get<std::string>()).is_absolute())
      throw CaptureError(field + " must be a path relative to the capture file's folder");
    out[name] = value.get<std::string>();
  }
  return out;
}

CapturedProblem parse_line(const std::string& where, const std::string& text) {
  const json j = parse_json(text);
  if (!j.is_object()) throw CaptureError(where + ": not a JSON object");
  const auto field = [&](const char* key, bool required) {
    if (!j.contains(key)) {
      if (required) throw CaptureError(where + ": field '" + key + "' is missing");
      return std::string();
    }
    if (!j.at(key).is_string()) throw CaptureError(where + ": field '" + key + "' must be a string");
    return j.at(key).get<std::string>();
  };
  CapturedProblem p{field("family", true), field("device", true), field("arch", false),   field("size", true),
                    field("args", false),  field("match", false), field("served", false), 0,
                    parse_inputs(where, j)};
  try {
    parse_size_text(p.size);
    parse_args_text(p.args);
  } catch (const std::invalid_argument& e) {
    throw CaptureError(where + ": field 'size' or 'args': " + e.what());
  }
  return p;
}

void check_first_line(const std::string& where, const std::string& text) {
  const json j = parse_json(text);
  if (!j.is_object() || !j.contains("tiletune_capture"))
    throw CaptureError(where + ": not a capture file (its first line must be {\"tiletune_capture\": " +
                       std::to_string(kCaptureVersion) + "})");
  if (j.at("tiletune_capture") != kCaptureVersion)
    throw CaptureError(where + ": field 'tiletune_capture': version " + j.at("tiletune_capture").dump() +
                       ", this tiletune reads " + std::to_string(kCaptureVersion));
}

}  // namespace

std::vector<CapturedProblem> read_capture(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw CaptureError(path.string() + ": cannot read");
  std::string line;
  if (!std::getline(in, line)) throw CaptureError(path.string() + ": line 1: empty, not a capture file");
  check_first_line(path.string() + ": line 1", line);
  std::vector<CapturedProblem> out;
  for (int n = 2; std::getline(in, line); ++n) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    out.push_back(parse_line(path.string() + ": line " + std::to_string(n), line));
    out.back().line = n;
  }
  return out;
}

CaptureWriter::CaptureWriter(std::filesystem::path path) : path_(std::move(path)) {}

void CaptureWriter::load() {
  if (!loaded_) {
    std::error_code ec;
    if (std::filesystem::exists(path_, ec)) {
      for (const auto& old : read_capture(path_)) seen_.insert({old.family, old.device, old.size, old.args});
      // A last line without its newline (an editor's, or a crash's) must not swallow the next one.
      const auto size = std::filesystem::file_size(path_, ec);
      std::ifstream in(path_, std::ios::binary);
      char last = '\n';
      if (!ec && size > 0 && in.seekg(static_cast<std::streamoff>(size) - 1).get(last) && last != '\n')
        std::ofstream(path_, std::ios::app) << "\n";
    } else {
      std::ofstream(path_) << json{{"tiletune_capture", kCaptureVersion}}.dump() << "\n";
    }
    loaded_ = true;
  }
}

bool CaptureWriter::contains(const CapturedProblem& p) {
  std::lock_guard lock(mutex_);
  load();
  return seen_.count({p.family, p.device, p.size, p.args}) > 0;
}

bool CaptureWriter::record(const CapturedProblem& p) {
  std::lock_guard lock(mutex_);
  load();
  if (!seen_.insert({p.family, p.device, p.size, p.args}).second) return false;
  json line{{"family", p.family}, {"device", p.device}, {"arch", p.arch},    {"size", p.size},
            {"args", p.args},     {"match", p.match},   {"served", p.served}};
  if (!p.inputs.empty()) line["inputs"] = p.inputs;
  std::ofstream out(path_, std::ios::app);
  out << line.dump() << "\n";
  if (!out) throw CaptureError(path_.string() + ": cannot write");
  return true;
}

std::filesystem::path capture_inputs_dir(const std::filesystem::path& capture, const CapturedProblem& p) {
  return std::filesystem::path(capture.filename().string() + ".inputs") /
         (p.family + "-" + content_hash(p.device + '\0' + p.size + '\0' + p.args));
}

bool capture_inputs_enabled(bool option) {
  const char* env = std::getenv("TILETUNE_CAPTURE_INPUTS");
  return option || (env && std::string(env) == "1");
}

std::filesystem::path capture_path(const std::filesystem::path& option,
                                   const std::filesystem::path& database) {
  if (!option.empty()) return option;
  const char* env = std::getenv("TILETUNE_CAPTURE");
  if (!env || !*env || std::string(env) == "0") return {};
  if (std::string(env) == "1") return database.string() + ".capture.jsonl";
  return env;
}

}  // namespace tiletune

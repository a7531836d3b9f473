// A family's inputs read from files: the fill, the command line's override, and the hash that keeps results
// measured on different data apart.
#include <algorithm>

#include "tiletune/family.hpp"

namespace tiletune {

Fill file_fill(const std::filesystem::path& path, InputFormat format, ElementType type) {
  Fill f;
  f.kind = Fill::Kind::file;
  f.format = format;
  std::error_code ec;
  f.path = std::filesystem::absolute(path, ec);
  if (ec) throw InputFileError(path.string() + ": cannot resolve the path (" + ec.message() + ")");
  inspect_input(f.path, format, type, std::nullopt);
  f.hash = file_content_hash(f.path);
  return f;
}

void use_input_file(KernelFamily& family, const std::string& name, const std::filesystem::path& path) {
  const std::string where = "--input " + name + ": ";
  const InputFormat format = path.extension() == ".npy" ? InputFormat::npy : InputFormat::raw;
  Fill* fill = nullptr;
  ElementType type = ElementType::f32;
  for (auto& a : family.arguments)
    if (a.kind == ArgKind::buffer && a.name == name && a.role != BufferRole::output)
      fill = &a.fill, type = a.type;
  for (auto& c : family.constants)
    if (c.name == name) fill = &c.fill, type = c.type;
  if (!fill)
    throw FamilyError(where + "family " + family.name + " has no input buffer or constant of that name");
  try {
    *fill = file_fill(path, format, type);
  } catch (const InputFileError& e) {
    throw FamilyError(where + e.what());
  }
  family.template_hash = template_hash_of(family);
}

// Covers the description, the template as read, the family's own reference kernel, and every input file's
// bytes, and the setup kernels: a sweep on other data is another template to resume and look up.
std::string template_hash_of(const KernelFamily& f) {
  std::string text = f.description_json + '\0' + f.source + '\0' + f.reference.kernel.source;
  const auto add = [&text](const std::string& name, const Fill& fill) {
    if (fill.kind == Fill::Kind::file) text += '\0' + name + '=' + to_string(fill.format) + ':' + fill.hash;
  };
  for (const auto& a : f.arguments) add(a.name, a.fill);
  for (const auto& c : f.constants) add(c.name, c.fill);
  for (const auto& k : f.setup) text += '\0' + k.kernel.file + '\0' + k.kernel.source;
  return content_hash(text);
}

}  // namespace tiletune

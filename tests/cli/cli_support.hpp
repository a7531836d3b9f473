// What the CLI tests share: running the tiletune command in a scratch folder and reading what it left.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "../file_bytes.hpp"
#include "../test_paths.hpp"

namespace tiletune::test {

struct CmdResult {
  int status = -1;
  std::string out, err;
};

// `prefix` goes before the binary: environment assignments, or a command that runs it as another user.
inline CmdResult tiletune_cmd(const std::string& args, const TempDir& dir, const std::string& prefix = "") {
  const auto bin = tiletune_binary();
  EXPECT_FALSE(bin.empty()) << "tiletune binary not found";
  const std::string out = (dir.path / "stdout").string(), err = (dir.path / "stderr").string();
  const std::string cmd = "cd '" + dir.path.string() + "' && TILETUNE_CACHE='" +
                          (dir.path / "cache").string() + "' " + prefix + " '" + bin.string() + "' " + args +
                          " >'" + out + "' 2>'" + err + "'";
  CmdResult r;
  const int raw = std::system(cmd.c_str());
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  r.out = read_bytes(out);
  r.err = read_bytes(err);
  return r;
}

inline int lines(const std::string& s) { return static_cast<int>(std::count(s.begin(), s.end(), '\n')); }

inline bool have_gpu(const TempDir& dir) {
  return tiletune_cmd("devices", dir).out.find("GPUs present") != std::string::npos;
}

}  // namespace tiletune::test

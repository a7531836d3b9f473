// The build that is running: its version and commit. One generated file defines them, so that a new commit
// recompiles that file alone (every other object stays the same, and a compiler cache keeps it).
#pragma once

namespace tiletune {

const char* build_version();  // "0.1.0"
const char* build_git_sha();  // 12 hex digits, "-dirty" when tracked files differed, or "unknown"

}  // namespace tiletune

#define TILETUNE_VERSION (::tiletune::build_version())
#define TILETUNE_GIT_SHA (::tiletune::build_git_sha())

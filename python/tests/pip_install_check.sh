#!/usr/bin/env bash
# Builds and installs the Python package as a user does (pip install ./python, here into a folder of its own
# and with the build requirements already in this Python), then runs the CPU tests against what it installed.
# The build is unoptimised (Debug: -O0, assertions on): this checks that the package builds, installs and works,
# not its speed, and an optimised build of the whole library took 6.5 of the 12 minutes of tools/test's ctest.
set -euo pipefail
python=$1 source_dir=$2 work=$3 tiletune=$4
rm -rf "$work"
mkdir -p "$work"
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}
"$python" -m pip install -q --no-build-isolation --no-deps -C cmake.build-type=Debug --target "$work/site" \
  "$source_dir/python"
ls "$work/site/tiletune"
cd "$work"
PYTHONPATH="$work/site" TILETUNE_BIN="$tiletune" "$python" -m pytest -q -p no:cacheprovider \
  "$source_dir/python/tests/test_cpu.py"
PYTHONPATH="$work/site" "$python" -c 'import tiletune; print(tiletune.__file__, tiletune.__version__)' |
  grep -q "^$work/site/tiletune/__init__.py "

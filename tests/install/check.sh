#!/usr/bin/env bash
# Installs the build into a temporary prefix, builds tests/install against it with find_package(tiletune),
# and runs the client's consumer on an empty database and on a missing one, and the runtime's on a missing
# bundle (one error line). The runtime's consumer links neither NVRTC nor the driver library.
set -euo pipefail
build_dir=$1
source_dir=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build_dir" --prefix "$work/prefix" >/dev/null
cmake -S "$source_dir" -B "$work/build" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/build" >/dev/null
"$work/prefix/bin/tiletune" plan --family gemm_tiled --size 64x64x64 --device-profile h100 --no-compile --store --db "$work/t.db" >/dev/null
out=$("$work/build/consumer" "$work/t.db")
echo "$out"
[ "$out" = "not_found: BLOCK_Y=16,TILE_K=16,TILE_WIDTH=16" ]
set +e
missing=$("$work/build/consumer" "$work/missing.db")
rc=$?
set -e
echo "$missing"
[ $rc -eq 1 ] && [[ $missing == error:* ]]

needed=$(readelf -d "$work/build/runtime_consumer" | grep NEEDED || true)
echo "$needed"
if grep -q -E 'libnvrtc|libcuda\.so' <<<"$needed"; then
  echo "runtime_consumer links NVRTC or the driver library" >&2
  exit 1
fi
set +e
bundle_missing=$("$work/build/runtime_consumer" "$work/no-bundle")
rc=$?
set -e
echo "$bundle_missing"
[ $rc -eq 1 ] && [[ $bundle_missing == error:*"no $work/no-bundle/manifest.json"* ]]

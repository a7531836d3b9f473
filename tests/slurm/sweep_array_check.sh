#!/usr/bin/env bash
# tools/slurm/sweep_array against a stand-in sbatch: it must submit the CPU warm-up array, the GPU sweep array
# (one GPU per task, after the warm-up) and the merge (after the sweeps), with each task's shard. Then the
# warm-up tasks' own commands run here, for real: N sharded plans fill the compile cache, after which a plan
# of the whole space compiles nothing (what a GPU task then finds). Usage: sweep_array_check.sh TILETUNE WORKDIR
set -euo pipefail
tiletune=$1
work=$2
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
rm -rf "$work"
mkdir -p "$work/bin"
fail() { echo "sweep_array_check: $*" >&2; exit 1; }

# sbatch that records each submission (one argument per line, then a separator) and prints a job id.
cat >"$work/bin/sbatch" <<'STUB'
#!/usr/bin/env bash
n=$(($(cat "$SBATCH_LOG.count" 2>/dev/null || echo 100) + 1))
echo "$n" >"$SBATCH_LOG.count"
{ printf '%s\n' "$@"; echo "----"; } >>"$SBATCH_LOG"
echo "$n"
STUB
chmod +x "$work/bin/sbatch"
export SBATCH_LOG=$work/sbatch.log SBATCH=$work/bin/sbatch TILETUNE=$tiletune

"$root/tools/slurm/sweep_array" --family gemm_naive --size 1000x1000x1000 --shards 3 --out "$work/out" --warm \
  -- --strategy brute_force >"$work/submit.txt"
cat "$work/submit.txt"
[ "$(grep -c -- '^----$' "$SBATCH_LOG")" = 3 ] || fail "expected 3 submissions: $(cat "$SBATCH_LOG")"

# The i-th submission's arguments, one per line.
submission() { awk -v want="$1" '/^----$/ {n++; next} n == want - 1' "$SBATCH_LOG"; }
after() { submission "$1" | grep -A1 -x -- "$2" | tail -n 1; }
[ "$(after 1 --array)" = "0-2" ] || fail "warm-up array: $(submission 1)"
submission 1 | grep -qx -- "--gres" && fail "the warm-up asks for a GPU"
[ "$(after 2 --array)" = "0-2" ] || fail "sweep array: $(submission 2)"
[ "$(after 2 --gres)" = "gpu:1" ] || fail "a sweep task needs one GPU"
[ "$(after 2 --dependency)" = "afterok:101" ] || fail "the sweeps must wait for the warm-up"
[ "$(after 3 --dependency)" = "afterok:102" ] || fail "the merge must wait for the sweeps"
sweep_cmd=$(after 2 --wrap)
merge_cmd=$(after 3 --wrap)
case $sweep_cmd in *'sweep --family gemm_naive'*'--shard ${SLURM_ARRAY_TASK_ID}/3'*'brute_force'*) ;;
  *) fail "sweep command: $sweep_cmd" ;; esac
for i in 0 1 2; do
  case $merge_cmd in *"out/shard-$i.db"*) ;; *) fail "the merge lacks shard $i: $merge_cmd" ;; esac
done
case $merge_cmd in *"merge "*"-o $work/out/all.db"*) ;; *) fail "merge command: $merge_cmd" ;; esac

# The warm-up tasks, run here as Slurm would run them.
warm_cmd=$(after 1 --wrap)
for i in 0 1 2; do
  SLURM_ARRAY_TASK_ID=$i bash -c "$warm_cmd" >"$work/warm-$i.txt" 2>&1 || fail "warm-up $i: $(cat "$work/warm-$i.txt")"
  grep -q "in shard $i/3" "$work/warm-$i.txt" || fail "warm-up $i did not plan its shard: $(cat "$work/warm-$i.txt")"
done
"$tiletune" plan --family gemm_naive --size 1000x1000x1000 --device-profile h100 --cache "$work/out/cache" \
  --json >"$work/whole.json"
python3 - "$work/whole.json" <<'PY'
import json, sys
plan = json.load(open(sys.argv[1]))
c = plan["compile"]
if c["jobs"] == 0 or c["from_cache"] != c["jobs"] or c["compiled"] != 0:
    sys.exit(f"sweep_array_check: after the sharded warm-up a whole plan still compiles: {c}")
print(f"after 3 sharded warm-up plans, all {c['jobs']} runnable configurations come from the cache")
PY
echo "sweep_array_check: ok"

#!/usr/bin/env python3
"""Kernel Tuner cache files between Kernel Tuner's own code and tiletune, both ways, without a GPU.

1. Writes a cache for gemm_tiled on the H100 with Kernel Tuner's util.process_cache and util.store_cache (as
   its sequential runner does, failures included, left open as a running tuning leaves it), imports it with
   `tiletune import --format kernel_tuner`, and checks the stored sweep (`tiletune export --format json`,
   `tiletune show`); closed with util.close_cache, the same file imports as the same sweep (skipped).
2. Stores a tiletune sweep with every outcome, exports it with `tiletune export --format kernel_tuner`, reads it
   back with Kernel Tuner's util.read_cache (and, where Kernel Tuner has it, its simulation runner through
   interface.tune_cache), and checks configurations, times and failures; Kernel Tuner can go on appending to it.

Usage: python kt_cache_roundtrip.py --tiletune PATH --workdir DIR    (a Python with kernel_tuner installed)
Exits non-zero with one message on the first mismatch.
"""

import argparse
import copy
import inspect
import json
import os
import shutil
import subprocess
import sys
import types
import warnings
from datetime import datetime, timezone

try:
    import kernel_tuner
    from kernel_tuner import util
except ImportError as e:  # the ctest needs a Python with kernel_tuner
    print(f"kt_cache_roundtrip: kernel_tuner is not importable ({e})", file=sys.stderr)
    sys.exit(2)

FAMILY = "gemm_tiled"
DEVICE = "NVIDIA H100 80GB HBM3"  # tiletune's built-in h100 profile
PROBLEM = [1000, 1000, 1000]
FAILURES = {"pruned": "InvalidConfig", "compile_failed": "CompilationFailedConfig",
            "runtime_failed": "RuntimeFailedConfig", "launch_failed": "RuntimeFailedConfig",
            "timeout": "RuntimeFailedConfig", "wrong_result": "RuntimeFailedConfig"}


class Mismatch(Exception):
    pass


def check(condition, message):
    if not condition:
        raise Mismatch(message)


def kt_version():
    version = getattr(kernel_tuner, "__version__", None)
    if version is None:
        from importlib.metadata import version as dist_version
        version = dist_version("kernel_tuner")
    return tuple(int(p) for p in version.split(".")[:2] if p.isdigit())


class Tiletune:
    def __init__(self, binary, workdir):
        self.binary, self.workdir = binary, workdir

    def run(self, *args, ok=True):
        r = subprocess.run([self.binary, *args], cwd=self.workdir, capture_output=True, text=True)
        if ok and r.returncode != 0:
            raise Mismatch(f"tiletune {' '.join(args)} failed ({r.returncode}): {r.stderr.strip()}")
        return r

    def export_json(self, db):
        return json.loads(self.run("export", "--format", "json", "--db", db).stdout)


# ---- 1. Kernel Tuner writes, tiletune reads ----

def write_cache_with_kernel_tuner(path, tune_params, entries):
    """entries: (params, result) as Kernel Tuner's runner builds them; failures as ErrorConfig instances."""
    kernel_options = types.SimpleNamespace(kernel_name=FAMILY, problem_size=tuple(PROBLEM))
    cache = {}
    tuning_options = types.SimpleNamespace(tune_params=tune_params, simulation_mode=False, objective="time",
                                           cache=cache, cachefile=path, metrics=None)
    dev = types.SimpleNamespace(name=DEVICE)
    runner = types.SimpleNamespace(dev=dev, simulation_mode=False, get_device_info=lambda: dev)
    util.process_cache(path, kernel_options, tuning_options, runner)
    by_tuning_options = "tuning_options" in inspect.signature(util.store_cache).parameters
    for params, result in entries:
        key = ",".join(str(params[k]) for k in tune_params)
        record = dict(params)
        record.update(result)
        if by_tuning_options:  # Kernel Tuner 1.0 to 1.3
            util.store_cache(key, record, tuning_options)
        else:
            util.store_cache(key, record, path, cache)


def kernel_tuner_entries(tune_params):
    """Two measured configurations and one of each failure, in the form of the installed Kernel Tuner."""
    new_errors = kt_version() >= (1, 4)
    stamp = lambda: str(datetime.now(timezone.utc))
    timings = {"compile_time": 95.5, "verification_time": 0.75, "benchmark_time": 12.0, "strategy_time": 0,
               "framework_time": 0.25}

    def failed(error):
        result = {"compile_time": 40.0, "verification_time": 0, "benchmark_time": 0, "timestamp": stamp()}
        if new_errors:
            result["__error__"] = error
        else:
            result["time"] = error
        return result

    names = list(tune_params)
    config = lambda w, y, k: dict(zip(names, (w, y, k)))
    return [
        (config(16, 16, 16), dict(time=0.5, times=[0.52, 0.49, 0.5, 0.51], timestamp=stamp(), **timings)),
        (config(32, 16, 32), dict(time=0.4, times=[0.39, 0.41, 0.4], timestamp=stamp(), **timings)),
        (config(64, 32, 64), failed(util.InvalidConfig())),
        (config(8, 8, 8), failed(util.CompilationFailedConfig())),
        (config(16, 8, 16), failed(util.RuntimeFailedConfig())),
    ]


def check_imported(doc, tune_params, entries):
    sweeps = doc["sweeps"]
    check(len(sweeps) == 1, f"expected one stored sweep, found {len(sweeps)}")
    sweep = sweeps[0]
    check(sweep["family"]["name"] == FAMILY, f"family {sweep['family']['name']}")
    check(sweep["device"]["name"] == DEVICE, f"device {sweep['device']['name']}")
    check(sweep["problem"]["size"] == "x".join(map(str, PROBLEM)), f"problem {sweep['problem']['size']}")
    stored = {tuple(r["params"][k] for k in tune_params): r for r in sweep["results"]}
    check(len(stored) == len(entries), f"{len(stored)} results stored for {len(entries)} cache entries")
    for params, result in entries:
        key = tuple(params[k] for k in tune_params)
        check(key in stored, f"configuration {params} was not stored")
        r = stored[key]
        error = result.get("__error__", result["time"] if isinstance(result.get("time"), util.ErrorConfig) else None)
        if error is None:
            check(r["outcome"] == "ok", f"{params}: outcome {r['outcome']}, expected ok")
            check(r["median_ms"] == result["time"], f"{params}: median_ms {r['median_ms']} != time {result['time']}")
            check(r["min_ms"] == min(result["times"]), f"{params}: min_ms {r['min_ms']} != min(times)")
            check(r["repetitions"] == len(result["times"]), f"{params}: repetitions {r['repetitions']}")
            check(r.get("times_ms", result["times"]) == result["times"], f"{params}: times_ms {r.get('times_ms')}")
            check(r.get("compile_ms", result["compile_time"]) == result["compile_time"],
                  f"{params}: compile_ms {r.get('compile_ms')}")
            check(r["metric_unit"] == "GFLOP/s" and abs(r["metric"] - 2e9 / (result["time"] * 1e-3) / 1e9) < 1e-6,
                  f"{params}: metric {r['metric']} {r['metric_unit']}")
        else:
            expected = {"InvalidConfig": "pruned", "CompilationFailedConfig": "compile_failed",
                        "RuntimeFailedConfig": "runtime_failed"}[str(error)]
            check(r["outcome"] == expected, f"{params}: outcome {r['outcome']}, expected {expected} for {error}")
            check(r["median_ms"] is None, f"{params}: a failure has a time {r['median_ms']}")


def kernel_tuner_to_tiletune(tt, workdir, tune_params):
    cache_file = os.path.join(workdir, "kt_written.json")
    db = "from_kt.db"
    for leftover in (cache_file, os.path.join(workdir, db)):
        if os.path.exists(leftover):
            os.remove(leftover)
    entries = kernel_tuner_entries(tune_params)
    write_cache_with_kernel_tuner(cache_file, tune_params, entries)
    with open(cache_file) as f:
        text = f.read()
    check(text.rstrip().endswith(","), "Kernel Tuner's cache was expected to be left open (ending with ',')")

    r = tt.run("import", "--format", "kernel_tuner", cache_file, "--family", FAMILY, "--db", db)
    check("imported 1 sweeps (5 results)" in r.stdout, f"import said: {r.stdout.strip()}")
    check_imported(tt.export_json(db), tune_params, entries)
    shown = tt.run("show", "--db", db).stdout
    check("ok: 2" in shown and "pruned: 1" in shown and "compile_failed: 1" in shown and "runtime_failed: 1" in shown,
          f"tiletune show gave unexpected counts:\n{shown}")

    util.close_cache(cache_file)  # as tune_kernel does when it ends
    r = tt.run("import", "--format", "kernel_tuner", cache_file, "--family", FAMILY, "--db", db)
    check("skipped 1 already present" in r.stdout, f"the closed cache was stored again: {r.stdout.strip()}")
    return tt.export_json(db)


# ---- 2. tiletune writes, Kernel Tuner reads ----

def tiletune_sweep_with_every_outcome(doc):
    """A copy of the imported sweep under a new uid whose results carry every tiletune outcome."""
    sweep = copy.deepcopy(doc["sweeps"][0])
    sweep["uid"] = "0123456789abcdef0123456789abcdef"
    sweep["strategy"] = "brute_force"
    started = sweep["started_at"]
    base = {"reason": "", "median_ms": None, "min_ms": None, "spread": None, "repetitions": 0, "metric": None,
            "metric_unit": "", "measured_at": started, "times_ms": [], "compile_ms": None, "measure_ms": None}

    def result(w, y, k, outcome, **fields):
        r = dict(base, params={"TILE_WIDTH": w, "BLOCK_Y": y, "TILE_K": k}, outcome=outcome)
        r.update(fields)
        return r

    sweep["results"] = [
        result(16, 16, 16, "ok", median_ms=0.31, min_ms=0.3, spread=0.02, repetitions=5,
               times_ms=[0.3, 0.31, 0.31, 0.32, 0.33], compile_ms=210.0, measure_ms=35.5),
        result(32, 32, 32, "ok", median_ms=0.27, min_ms=0.26, spread=0.01, repetitions=3,
               times_ms=[0.26, 0.27, 0.28], compile_ms=190.25, measure_ms=30.0),
        result(8, 8, 8, "ok", median_ms=0.9, min_ms=0.85, spread=0.05, repetitions=3, times_ms=[0.85, 0.9, 0.95]),
        result(64, 32, 64, "pruned", reason="threads: 2048 per block > 1024"),
        result(4, 4, 4, "compile_failed", reason="ptxas error", compile_ms=12.0),
        result(12, 12, 12, "launch_failed", reason="cudaErrorLaunchOutOfResources"),
        result(20, 20, 20, "runtime_failed", reason="cudaErrorIllegalAddress"),
        result(24, 24, 24, "timeout", reason="no result within 2 s"),
        result(48, 48, 48, "wrong_result", reason="1 of 1000000 elements of C differ"),
    ]
    return {key: doc[key] for key in doc if key != "sweeps"} | {"sweeps": [sweep]}


def tiletune_to_kernel_tuner(tt, workdir, imported_doc):
    db = "native.db"
    if os.path.exists(os.path.join(workdir, db)):
        os.remove(os.path.join(workdir, db))
    doc = tiletune_sweep_with_every_outcome(imported_doc)
    with open(os.path.join(workdir, "native.json"), "w") as f:
        json.dump(doc, f)
    tt.run("import", "native.json", "--db", db)
    sweep_id = tt.run("show", "--list", "--db", db).stdout.splitlines()[2].split()[0]
    out = os.path.join(workdir, "tt_written.json")
    tt.run("export", "--format", "kernel_tuner", "--sweep", sweep_id, "--db", db, "-o", out)
    with open(out) as f:
        written = f.read()

    data = util.read_cache(out, open_cache=False)
    with open(out) as f:
        check(f.read() == written, "util.read_cache(open_cache=False) changed the file")
    check(data["device_name"] == DEVICE, f"device_name {data['device_name']}")
    check(data["kernel_name"] == FAMILY, f"kernel_name {data['kernel_name']}")
    check(list(data["problem_size"]) == PROBLEM, f"problem_size {data['problem_size']}")
    keys = data["tune_params_keys"]
    check(sorted(keys) == ["BLOCK_Y", "TILE_K", "TILE_WIDTH"], f"tune_params_keys {keys}")
    results = doc["sweeps"][0]["results"]
    check(len(data["cache"]) == len(results), f"{len(data['cache'])} cache entries for {len(results)} results")
    for r in results:
        key = ",".join(str(r["params"][k]) for k in keys)
        check(key in data["cache"], f"configuration {key} is missing from the cache")
        entry = data["cache"][key]
        for k in keys:
            check(entry[k] == r["params"][k], f"{key}: {k} = {entry[k]}")
        if r["outcome"] == "ok":
            check("__error__" not in entry, f"{key}: an ok result reads as failed: {entry.get('__error__')!r}")
            check(entry["time"] == r["median_ms"], f"{key}: time {entry['time']} != median_ms {r['median_ms']}")
            check(entry["times"] == r["times_ms"], f"{key}: times {entry['times']} != times_ms {r['times_ms']}")
            if r["compile_ms"] is not None:
                check(entry["compile_time"] == r["compile_ms"], f"{key}: compile_time {entry.get('compile_time')}")
        else:
            error = entry.get("__error__")
            check(isinstance(error, util.ErrorConfig), f"{key}: Kernel Tuner does not read {r['outcome']} as a failure")
            check(str(error) == FAILURES[r["outcome"]], f"{key}: {r['outcome']} read as {error}")

    # Kernel Tuner's own choice of the best configuration, where it can simulate from a cache.
    interface = __import__("kernel_tuner.interface", fromlist=["interface"])
    if hasattr(interface, "tune_cache"):
        sim = os.path.join(workdir, "tt_simulated.json")
        shutil.copy(out, sim)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            runs, _ = interface.tune_cache(sim, strategy="brute_force", quiet=True)
        measured = [x for x in runs if x and "__error__" not in x]
        best = min(measured, key=lambda x: x["time"])
        check((best["TILE_WIDTH"], best["BLOCK_Y"], best["TILE_K"]) == (32, 32, 32) and best["time"] == 0.27,
              f"Kernel Tuner's simulation chose {best}")

    # Kernel Tuner can go on tuning into it: read_cache opens the file, store_cache appends, it reads again.
    appended = os.path.join(workdir, "tt_appended.json")
    shutil.copy(out, appended)
    cache = util.read_cache(appended, open_cache=True)["cache"]
    extra = {"TILE_WIDTH": 4, "BLOCK_Y": 8, "TILE_K": 4, "time": 1.5, "times": [1.5]}
    key = ",".join(str(extra[k]) for k in keys)
    if "tuning_options" in inspect.signature(util.store_cache).parameters:
        util.store_cache(key, extra, types.SimpleNamespace(cache=cache, cachefile=appended))
    else:
        util.store_cache(key, extra, appended, cache)
    again = util.read_cache(appended, open_cache=False)
    check(len(again["cache"]) == len(results) + 1 and again["cache"][key]["time"] == 1.5,
          "Kernel Tuner could not append to the exported cache")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiletune", required=True, help="the tiletune binary")
    parser.add_argument("--workdir", required=True, help="a scratch folder (created if missing)")
    args = parser.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    tt = Tiletune(os.path.abspath(args.tiletune), os.path.abspath(args.workdir))
    tune_params = {"TILE_WIDTH": [4, 8, 12, 16, 20, 24, 32, 48, 64], "BLOCK_Y": [4, 8, 12, 16, 20, 24, 32, 48, 64],
                   "TILE_K": [4, 8, 12, 16, 20, 24, 32, 48, 64]}
    try:
        imported = kernel_tuner_to_tiletune(tt, tt.workdir, tune_params)
        tiletune_to_kernel_tuner(tt, tt.workdir, imported)
    except Mismatch as e:
        print(f"kt_cache_roundtrip: FAIL (Kernel Tuner {'.'.join(map(str, kt_version()))}): {e}", file=sys.stderr)
        return 1
    print(f"kt_cache_roundtrip: ok with Kernel Tuner {'.'.join(map(str, kt_version()))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

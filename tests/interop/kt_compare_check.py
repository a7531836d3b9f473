#!/usr/bin/env python3
"""tools/bench/kt_compare.py on a real sweep, checked against Kernel Tuner's own search space.

Imports the committed H100 cache of conv1d_register into a new database, then runs kt_compare.py on it:
1. brute force: the evaluations and simulated seconds until within 1%, 2% and 5% are those of the first
   configurations of Kernel Tuner's own Searchspace (sorted, as its brute force goes) that get there;
2. random_sample, genetic_algorithm and dual_annealing: the same seeds give the same records (bayes_opt runs);
3. a budget of one evaluation: runs that do not get within 1% are recorded as not reaching it, not crashed on;
4. a sweep that is not in the database: tiletune's export error is recorded, and the other sweep still runs;
5. --space: a sweep with a compile and a run failure, written as a space file by `tiletune replay
   --write-space`, gives the cache `tiletune export` gives (to the space file's 6 digits) and the same runs,
   and a malformed space file is recorded as such.

Usage: python kt_compare_check.py --tiletune PATH --workdir DIR    (a Python with kernel_tuner installed)
Exits non-zero with one message on the first mismatch.
"""

import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import sys

try:
    from kernel_tuner.searchspace import Searchspace
except ImportError as e:  # the ctest needs a Python with kernel_tuner
    print(f"kt_compare_check: kernel_tuner is not importable ({e})", file=sys.stderr)
    sys.exit(2)

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CACHE = os.path.join(ROOT, "bench", "results", "h100-kt-conv1d_register.json")
SCRIPT = os.path.join(ROOT, "tools", "bench", "kt_compare.py")
sys.path.insert(0, os.path.dirname(SCRIPT))
import kt_compare  # noqa: E402  (the script under test, for its cost rule and restrictions)


class Mismatch(Exception):
    pass


def check(condition, message):
    if not condition:
        raise Mismatch(message)


def make_db(tiletune, workdir, cache=CACHE, name="ref.db"):
    db = os.path.join(workdir, name)
    subprocess.run(
        [tiletune, "import", "--db", db, "--format", "kernel_tuner", cache, "--family", "conv1d_register"],
        check=True,
        capture_output=True,
    )
    con = sqlite3.connect(db)
    (sweep_id,) = con.execute("SELECT id FROM sweeps WHERE kind = 'sweep'").fetchone()
    con.close()
    return db, sweep_id


def compare(tiletune, db, workdir, tag, sweeps, strategies, seeds, extra=()):
    out = os.path.join(workdir, tag)
    cmd = [
        sys.executable,
        SCRIPT,
        "--db",
        db,
        "--tiletune",
        tiletune,
        "--seeds",
        str(seeds),
        "--workdir",
        out,
        "--json",
        out + ".json",
        "--markdown",
        out + ".md",
    ]
    cmd += [a for s in sweeps for a in ("--sweep", str(s))] + [
        a for s in strategies for a in ("--strategy", s)
    ]
    proc = subprocess.run(cmd + list(extra), capture_output=True, text=True)
    check(proc.returncode == 0, f"{tag}: kt_compare.py exited {proc.returncode}: {proc.stderr.strip()}")
    with open(out + ".json") as f:
        doc = json.load(f)
    with open(out + ".md") as f:
        return doc, f.read()


def expected_brute_force(cache_path):
    """Walks Kernel Tuner's Searchspace in its own order and counts to each threshold."""
    restrictions, doc = kt_compare._restrictions(cache_path)
    space = Searchspace(doc["tune_params"], restrictions, 1_000_000_000)
    entries = doc["cache"]
    optimum = min(v["time"] for v in entries.values() if "__error__" not in v)
    expected, best, spent = {}, float("inf"), 0.0
    for n, config in enumerate(space.sorted_list(), start=1):  # the order its brute force measures in
        entry = entries[",".join(str(v) for v in config)]
        spent += kt_compare.simulated_ms(entry)
        if "__error__" not in entry:
            best = min(best, entry["time"])
        for t in kt_compare.THRESHOLDS:
            if t not in expected and best <= optimum * (1 + t / 100):
                expected[t] = (n, round(spent / 1000, 3))
    return expected, space.size


def check_brute_force(tiletune, db, sweep_id, workdir):
    doc, table = compare(tiletune, db, workdir, "brute", [sweep_id], ["brute_force"], 1)
    space = doc["spaces"][0]
    versions = doc["libraries"]
    check(
        versions["numpy"] and versions["scipy"] and versions["python"].count(".") == 2,
        f"the library versions the runs depend on are not recorded: {versions}",
    )
    expected, size = expected_brute_force(space["cache"])
    check(space["runnable"] == size, f"runnable {space['runnable']} != Kernel Tuner's space size {size}")
    run = space["strategies"]["brute_force"]["runs"][0]
    check("error" not in run, f"brute force failed: {run.get('error')}")
    for t, (n, seconds) in expected.items():
        got = (run[f"evals_to_{t}"], run[f"simulated_s_to_{t}"])
        check(
            got == (n, seconds),
            f"brute force to {t}%: recorded {got}, Kernel Tuner's order gives {(n, seconds)}",
        )
    check(
        "| | | | brute_force | %d [" % expected[1][0] in table,
        "the table lacks the brute-force row:\n" + table,
    )


def strip(run):
    return {k: v for k, v in run.items() if k not in ("wall_s",) and not k.startswith("strategy_s")}


def check_repeatable(tiletune, db, sweep_id, workdir):
    # bayes_opt runs but is not compared: its default method decides when to refit its model from the wall
    # time of its predictions against that of the (simulated, near-instant) evaluations, so a loaded machine
    # can change its path.
    strategies = ["random_sample", "genetic_algorithm", "dual_annealing", "bayes_opt"]
    first, _ = compare(tiletune, db, workdir, "seeded-a", [sweep_id], strategies, 2)
    again, table = compare(tiletune, db, workdir, "seeded-b", [sweep_id], strategies[:-1], 2)
    for s in strategies:
        a = [strip(r) for r in first["spaces"][0]["strategies"][s]["runs"]]
        check(all("error" not in r for r in a), f"{s} failed: {a}")
        if s in again["spaces"][0]["strategies"]:
            b = [strip(r) for r in again["spaces"][0]["strategies"][s]["runs"]]
            check(a == b, f"{s}: the same seeds gave different runs:\n{a}\n{b}")
            check(f"| {s} |" in table, f"the table lacks {s}:\n{table}")


def check_unreached(tiletune, db, sweep_id, workdir):
    doc, table = compare(
        tiletune, db, workdir, "tiny", [sweep_id], ["random_sample"], 8, ["--max-fevals", "1"]
    )
    runs = doc["spaces"][0]["strategies"]["random_sample"]["runs"]
    summary = doc["spaces"][0]["strategies"]["random_sample"]["summary"]["evals_to_1"]
    check(all(r["evaluations"] == 1 and r["evals_to_1"] in (1, None) for r in runs), f"budget of 1: {runs}")
    missed = [r for r in runs if r["evals_to_1"] is None]
    check(missed, "with 8 seeds and one evaluation each, some run should miss 1% (the space has 232)")
    check(
        all(r["stopped"] == "budget" for r in missed),
        f"a missed run is not recorded as out of budget: {missed}",
    )
    check(summary["reached"] == len(runs) - len(missed), f"summary {summary} does not count the missed runs")


def check_export_error(tiletune, db, sweep_id, workdir):
    doc, table = compare(tiletune, db, workdir, "missing", [9999, sweep_id], ["random_sample"], 1)
    bad, good = doc["spaces"]
    check("not in the database" in bad.get("error", ""), f"missing sweep recorded as {bad}")
    check("strategies" in good, "the sweep after a failed export was not searched")
    check("export failed" in table, "the table does not show the failed export:\n" + table)


def make_failures_space(tiletune, workdir):
    """The committed cache with one configuration that failed to compile and one that failed to run, imported,
    and its sweep written as a space file; returns the database, the sweep and the space file."""
    with open(CACHE) as f:
        doc = json.load(f)
    runnable = sorted(k for k, v in doc["cache"].items() if v.get("__error__") != "InvalidConfig")
    for key, error, dropped in (
        (runnable[0], "CompilationFailedConfig", ("verification_time", "benchmark_time")),
        (runnable[1], "RuntimeFailedConfig", ()),
    ):
        for field in ("time", "times", "GB/s") + dropped:
            doc["cache"][key].pop(field, None)
        doc["cache"][key]["__error__"] = error
    cache, space = os.path.join(workdir, "failures.json"), os.path.join(workdir, "failures.csv")
    with open(cache, "w") as f:
        json.dump(doc, f)
    db, sweep_id = make_db(tiletune, workdir, cache, "failures.db")
    cmd = [tiletune, "replay", "--db", db, "--sweep", str(sweep_id), "--write-space", space]
    subprocess.run(cmd, check=True, capture_output=True)
    return db, sweep_id, space


def near(x, y, tolerance):
    return x == y or (x is not None and y is not None and abs(x - y) <= tolerance * max(abs(x), 1))


def same_entries(exported, written):
    """The fields Kernel Tuner reads, the times to the 6 significant digits a space file keeps."""
    fields = ("time", "compile_time", "verification_time", "benchmark_time")
    read = lambda entry: {f: entry[f] for f in fields + ("__error__",) if f in entry}
    check(exported.keys() == written.keys(), "the space's cache holds other configurations than the export's")
    for key in exported:
        a, b = read(exported[key]), read(written[key])
        same = a.keys() == b.keys() and a.get("__error__") == b.get("__error__")
        check(same and all(near(a[f], b[f], 5e-6) for f in fields if f in a), f"{key}: export {a}, space {b}")


def same_run(exported, written, strategy):
    """The same path; the optimum and the simulated seconds as near as the space file's 6 digits allow."""
    a, b = strip(exported), strip(written)
    check("error" not in a, f"{strategy} failed: {a}")
    for key in [k for k in a if k.startswith("simulated_s") or k in ("best_ms", "kt_simulated_s_total")]:
        x, y = a.pop(key), b.pop(key)
        check(near(x, y, 1e-5), f"{strategy} seed {a['seed']}: {key} {x} != {y}")
    check(a == b, f"{strategy}: the space file's run differs from the export's:\n{a}\n{b}")


def check_space_file(tiletune, db, sweep_id, workdir):
    db, sweep_id, space = make_failures_space(tiletune, workdir)
    bad = os.path.join(workdir, "bad.csv")
    with open(space) as f, open(bad, "w") as out:
        out.write("".join(f.readlines()[:4]) + "1,2,ok\n")
    strategies = ["random_sample", "genetic_algorithm"]
    extra = ["--space", space, "--space", bad]
    doc, table = compare(tiletune, db, workdir, "space", [sweep_id], strategies, 2, extra)
    exported, written, malformed = doc["spaces"]
    check("line 5" in malformed.get("error", ""), f"a malformed space file is recorded as {malformed}")
    caches = []
    for s in (exported, written):
        check("error" not in s, f"{s.get('name')}: {s.get('error')}")
        with open(s["cache"]) as f:  # the runnable entries, which Kernel Tuner searches
            caches.append(json.load(f))
    for field in ("device_name", "kernel_name", "problem_size", "tune_params_keys", "tune_params"):
        check(caches[0][field] == caches[1][field], f"{field}: {caches[0][field]} != {caches[1][field]}")
    same_entries(caches[0]["cache"], caches[1]["cache"])
    for s in strategies:
        for a, b in zip(exported["strategies"][s]["runs"], written["strategies"][s]["runs"]):
            same_run(a, b, s)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--tiletune", required=True)
    p.add_argument("--workdir", required=True)
    args = p.parse_args()
    shutil.rmtree(args.workdir, ignore_errors=True)
    os.makedirs(args.workdir)
    db, sweep_id = make_db(args.tiletune, args.workdir)
    steps = (check_brute_force, check_repeatable, check_unreached, check_export_error, check_space_file)
    try:
        for step in steps:
            step(args.tiletune, db, sweep_id, args.workdir)
    except Mismatch as e:
        print(f"kt_compare_check: {e}", file=sys.stderr)
        return 1
    print("kt_compare_check: %d passed, 0 failed" % len(steps))
    return 0


if __name__ == "__main__":
    sys.exit(main())

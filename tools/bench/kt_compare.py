#!/usr/bin/env python3
"""Kernel Tuner's own search strategies, replayed on tiletune's brute-force sweeps.

Each complete sweep of a tiletune database is exported as a Kernel Tuner cache (`tiletune export --format
kernel_tuner`), and each replay space file (bench/spaces/*.csv) is written as the cache that export gives
for its sweep; each is searched by Kernel Tuner's strategies in its simulation mode, one run per strategy and
seed. A run records how many unique configurations it had measured when its best-so-far first came within
1%, 2% and 5% of the sweep's optimum, and Kernel Tuner's simulated time (stored compile + verification +
benchmark time of those configurations) at that point. Writes a JSON file and a markdown table.

Needs Kernel Tuner 1.5 (pip install kernel_tuner==1.5.0) in the Python that runs it.
"""

import argparse
import json
import math
import multiprocessing
import os
import random
import sqlite3
import statistics
import subprocess
import sys
import time
import warnings

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
THRESHOLDS = (1, 2, 5)  # percent above the optimum
DEFAULT_STRATEGIES = ("bayes_opt", "genetic_algorithm", "dual_annealing", "random_sample")


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--db", help="tiletune database holding the brute-force sweeps (none: only --cache files)")
    p.add_argument("--tiletune", default="build/tools/tiletune/tiletune", help="the tiletune binary")
    p.add_argument(
        "--sweep",
        type=int,
        action="append",
        help="sweep id (repeatable; default: every complete " "brute-force sweep in --db)",
    )
    p.add_argument(
        "--cache",
        action="append",
        default=[],
        help="a Kernel Tuner cache file to search as well "
        "(repeatable), e.g. one written earlier by tiletune export",
    )
    p.add_argument(
        "--space",
        action="append",
        default=[],
        help="a tiletune replay space file (bench/spaces/*.csv) to search as well (repeatable)",
    )
    p.add_argument(
        "--templates",
        default=os.path.join(ROOT, "kernel_templates"),
        help="the folder of the families' family.json, whose parameter values a --space cache lists",
    )
    p.add_argument(
        "--strategy",
        action="append",
        help="Kernel Tuner strategy (repeatable; default: %s)" % ", ".join(DEFAULT_STRATEGIES),
    )
    p.add_argument("--seeds", type=int, default=20, help="runs per strategy and space, seeds 0..N-1")
    p.add_argument(
        "--max-fevals",
        type=int,
        default=0,
        help="evaluation budget of a run (default 0: the "
        "number of runnable configurations, so a run may measure the whole space)",
    )
    p.add_argument(
        "--run-wall-limit",
        type=float,
        default=300.0,
        help="seconds of real time after which a "
        "run is stopped and recorded as such (Kernel Tuner's own model fitting can be slow)",
    )
    p.add_argument("--jobs", type=int, default=1, help="runs at once (processes)")
    p.add_argument("--workdir", default="kt_compare_work", help="folder for the exported cache files")
    p.add_argument("--json", default="bench/results/h100-kt-strategies.json", help="results file to write")
    p.add_argument("--markdown", default="bench/results/h100-kt-strategies.md", help="table file to write")
    args = p.parse_args(argv)
    if not args.db and not args.cache and not args.space:
        p.error("give --db (its brute-force sweeps are exported), --cache FILE or --space FILE")
    return args


def reference_sweeps(db):
    """Every complete brute-force sweep of the database, read through SQLite read-only."""
    con = sqlite3.connect("file:%s?mode=ro" % os.path.abspath(db), uri=True)
    try:
        rows = con.execute(
            "SELECT s.id FROM sweeps s WHERE s.kind = 'sweep' AND s.strategy = 'brute_force' "
            "AND s.status = 'done' ORDER BY s.id"
        ).fetchall()
    finally:
        con.close()
    return [r[0] for r in rows]


def export_sweep(tiletune, db, sweep_id, workdir):
    """Writes the sweep as a Kernel Tuner cache; returns (path, None) or (None, tiletune's error text)."""
    path = os.path.join(workdir, "sweep-%d.json" % sweep_id)
    cmd = [tiletune, "export", "--db", db, "--format", "kernel_tuner", "--sweep", str(sweep_id), "-o", path]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        return None, "%s: exit %d: %s" % (" ".join(cmd), proc.returncode, proc.stderr.strip())
    return path, None


def read_space_file(path):
    """A replay space file as `tiletune replay --write-space` writes it: its name ('FAMILY SIZE [ARGS]
    DEVICE'), its family (then, where the file has it, its problem on a line of its own), and per runnable
    configuration (parameters, outcome, median ms, compile ms, measure ms, and the plan features that follow
    by name, NaN where unknown)."""
    with open(path) as f:
        lines = [line.rstrip("\r") for line in f.read().split("\n") if line.strip()]
    magic, family = "# tiletune replay space: ", "# family: "
    top = 3 if len(lines) > 2 and lines[2].startswith("# problem: ") else 2  # the problem line is optional
    if len(lines) < top + 2 or not lines[0].startswith(magic) or not lines[1].startswith(family):
        raise ValueError("%s: not a tiletune replay space file, or one without configurations" % path)
    header = lines[top].split(",")
    at = header.index("outcome") if "outcome" in header else 0  # the parameters come before it
    rows = []
    for n, line in enumerate(lines[top + 1 :], start=top + 2):
        fields = line.split(",")
        try:
            if not at or len(fields) != len(header) or fields[at] not in ("ok", "failed", "compile_failed"):
                raise ValueError()
            values = dict(zip(header, (int(v) for v in fields[:at])))
            plan = {k: float(v) if v else math.nan for k, v in zip(header[at + 4 :], fields[at + 4 :])}
            rows.append((values, fields[at], *(float(v) for v in fields[at + 1 : at + 4]), plan))
        except ValueError:
            raise ValueError("%s: line %d: not a configuration of the header's columns" % (path, n)) from None
    return lines[0][len(magic) :], lines[1][len(family) :], rows


def family_values(family, rows, templates):
    """Each parameter's values as the exporter lists them: in the order of the family's family.json (the
    values the configurations hold where there is none), the parameters sorted by name (its std::map)."""
    path = os.path.join(templates, family, "family.json")
    description = {}
    if os.path.exists(path):
        with open(path) as f:
            description = json.load(f)
    parameters = description.get("parameters", {})
    listed = {k: [v for v in p.get("values", []) if isinstance(v, int)] for k, p in parameters.items()}
    held = {k: sorted({values[k] for values, *_ in rows}) for k in rows[0][0]}
    if listed and (set(listed) != set(held) or any(not set(held[k]) <= set(listed[k]) for k in held)):
        raise ValueError(
            "%s: the space's parameters and values are not those %s lists: the family changed since the sweep"
            % (family, path)
        )
    return description.get("kernel", family), dict(sorted((listed or held).items()))


def space_entry(params, outcome, median_ms, compile_ms, measure_ms):
    """One cache entry as the exporter writes it: the time of an ok result, else Kernel Tuner's failure name;
    the compile time; the measuring time as benchmark time, except where nothing compiled to measure."""
    entry = dict(params)
    if outcome == "ok":
        entry["time"] = median_ms
    else:  # a space file's "failed" is any failure after compiling, which the exporter names so
        entry["__error__"] = "RuntimeFailedConfig" if outcome == "failed" else "CompilationFailedConfig"
    entry["compile_time"] = compile_ms
    if outcome != "compile_failed":
        entry["verification_time"] = 0
        entry["benchmark_time"] = measure_ms
    return entry


def write_space_cache(path, templates, workdir):
    """Writes a replay space file as the Kernel Tuner cache `tiletune export` writes for the sweep it came
    from. Its configurations are the space, failures too: the pruned ones are in neither file. Returns its
    path."""
    name, family, rows = read_space_file(path)
    if not name.startswith(family + " "):
        raise ValueError("%s: the space's name %r does not start with its family %s" % (path, name, family))
    size, _, rest = name[len(family) + 1 :].partition(" ")
    args, _, device = rest.partition(" ") if "=" in rest.partition(" ")[0] else ("", "", rest)
    dims = [int(d) for d in size.split("x")]
    kernel, tune_params = family_values(family, rows, templates)
    keys = list(tune_params)
    doc = {
        "device_name": device,
        "kernel_name": kernel,
        "problem_size": dims[0] if len(dims) == 1 else dims,
        "tune_params_keys": keys,
        "tune_params": tune_params,
        "objective": "time",
        # Unknown to a space file: the template hash, the device's uuid and the sweep's uid.
        "tiletune": {"family": family, "size": size, "args": args, "pruned": {}},
        "cache": {},
    }
    for values, *result, _plan in rows:  # a cache has no use for the plan features
        params = {k: values[k] for k in keys}
        doc["cache"][",".join(str(v) for v in params.values())] = space_entry(params, *result)
    out = os.path.join(workdir, "space-%s.json" % os.path.splitext(os.path.basename(path))[0])
    with open(out, "w") as f:
        json.dump(doc, f)
    return out


def describe_space(cache_path, workdir):
    """What a replay needs to know of a cache: its optimum and brute-force cost, and a copy of it holding only
    the runnable entries (the restriction keeps the others out of the space, so Kernel Tuner never reads
    them; a run then loads a file of thousands of entries, not of every pruned configuration)."""
    with open(cache_path) as f:
        doc = json.load(f)
    entries = doc["cache"]
    runnable = {k: v for k, v in entries.items() if v.get("__error__") != "InvalidConfig"}
    ok = [v["time"] for v in runnable.values() if "__error__" not in v and isinstance(v.get("time"), float)]
    if not ok:
        raise ValueError("%s: cache: no configuration has a time, so there is no optimum" % cache_path)
    stem = os.path.splitext(os.path.basename(cache_path))[0]
    runnable_path = os.path.join(workdir, stem + ".runnable.json")
    with open(runnable_path, "w") as f:
        json.dump(dict(doc, cache=runnable), f)
    extra = doc.get("tiletune", {})
    counted = sum(extra.get("pruned", {}).values())
    return {
        "source": cache_path,
        "cache": runnable_path,
        "kernel": doc.get("kernel_name", ""),
        "family": extra.get("family", doc.get("kernel_name", "")),
        "size": extra.get("size", str(doc.get("problem_size", ""))),
        "args": extra.get("args", ""),
        "device": doc.get("device_name", ""),
        "sweep_uid": extra.get("sweep_uid", ""),
        "configurations": len(entries) + counted,
        # Pruned before compiling: InvalidConfig entries (sweeps stored before schema version 4) or counts.
        "pruned": len(entries) - len(runnable) + counted,
        "runnable": len(runnable),
        "ok": len(ok),
        "optimum_ms": min(ok),
        "brute_force_simulated_s": sum(simulated_ms(v) for v in runnable.values()) / 1000.0,
    }


def simulated_ms(result):
    """What Kernel Tuner's simulation runner charges for a first visit: the three times, or nothing when the
    cache lacks one of them (as its runner does, e.g. for a configuration that failed to compile)."""
    try:
        return (
            float(result["compile_time"])
            + float(result["verification_time"])
            + float(result["benchmark_time"])
        )
    except (KeyError, TypeError, ValueError):
        return 0.0


class Progress:
    """Follows one run through the results Kernel Tuner's simulation runner hands back, in order."""

    def __init__(self, optimum_ms, wall_limit_s):
        self.targets = {t: optimum_ms * (1 + t / 100.0) for t in THRESHOLDS}
        self.hit = {}  # threshold -> (unique evaluations, simulated ms, strategy ms) when first within it
        self.seen = set()
        self.best_ms = float("inf")
        self.simulated_ms = 0.0
        self.strategy_ms = 0.0
        self.deadline = time.monotonic() + wall_limit_s
        self.stopped = "budget"

    def observe(self, result, keys):
        self.strategy_ms += float(result.get("strategy_time", 0) or 0)
        key = ",".join(str(result[k]) for k in keys)
        if key in self.seen:  # Kernel Tuner charges a revisit nothing: it is served from its cache
            return
        self.seen.add(key)
        self.simulated_ms += simulated_ms(result)
        t = result.get("time")
        if "__error__" not in result and isinstance(t, float):
            self.best_ms = min(self.best_ms, t)
        for threshold, target in self.targets.items():
            if threshold not in self.hit and self.best_ms <= target:
                self.hit[threshold] = (len(self.seen), self.simulated_ms, self.strategy_ms)

    def should_stop(self):
        """Within the tightest threshold (nothing later can change what is recorded), or out of time."""
        if len(self.hit) == len(self.targets):
            self.stopped = "within_%d%%" % THRESHOLDS[0]
            return True
        if time.monotonic() > self.deadline:
            self.stopped = "wall_limit"
            return True
        return False


_current = None  # the Progress of the run in flight in this process


def _install_observer():
    """Wraps the simulation runner so each batch it evaluates is seen, and a run ends through Kernel Tuner's
    own budget (the strategy then stops as at max_fevals) once nothing more can change its record."""
    from kernel_tuner.runners.simulation import SimulationRunner

    if getattr(SimulationRunner.run, "_kt_compare", False):
        return
    original = SimulationRunner.run

    def run(self, parameter_space, tuning_options):
        results = original(self, parameter_space, tuning_options)
        keys = list(tuning_options.tune_params.keys())
        for r in results:
            if r is not None:
                _current.observe(r, keys)
        if _current.should_stop():
            budget = tuning_options.budget
            budget.max_fevals = max(budget.num_fevals, 1)
        return results

    run._kt_compare = True
    SimulationRunner.run = run


def _seed_everything(seed):
    """Kernel Tuner's strategies draw from Python's and numpy's global generators; its Bayesian optimisation
    also asks scipy for a Latin hypercube with fresh entropy, which is given a seed here so a run repeats."""
    import numpy as np
    from scipy.stats import qmc
    from kernel_tuner.strategies import bayes_opt

    random.seed(seed)
    np.random.seed(seed)
    bayes_opt.LatinHypercube = lambda d, **kw: qmc.LatinHypercube(d, rng=np.random.randint(2**31), **kw)


def _restrictions(cache_path):
    """The configurations tiletune pruned before measuring (Kernel Tuner's InvalidConfig) are outside the
    space, as restrictions would put them; failures to compile or run stay in it, costing what they cost."""
    from constraint import FunctionConstraint

    with open(cache_path) as f:
        doc = json.load(f)
    names = doc["tune_params_keys"]
    allowed = {
        tuple(v[n] for n in names) for v in doc["cache"].values() if v.get("__error__") != "InvalidConfig"
    }
    return [FunctionConstraint(lambda *values: values in allowed)], doc


def run_one(job):
    """One Kernel Tuner search of one cache; returns its record (never raises)."""
    global _current
    space, strategy, seed, max_fevals, wall_limit = job
    started = time.monotonic()
    record = {"strategy": strategy, "seed": seed}
    try:
        from kernel_tuner import tune_kernel
        from kernel_tuner.util import infer_args_from_cache

        warnings.simplefilter("ignore")
        _install_observer()
        restrictions, doc = _restrictions(space["cache"])
        _seed_everything(seed)
        _current = Progress(space["optimum_ms"], wall_limit)
        # brute force takes no options: the space is its budget
        options = {} if strategy == "brute_force" else {"max_fevals": max_fevals}
        _, env = tune_kernel(
            **infer_args_from_cache(doc),
            cache=space["cache"],
            restrictions=restrictions,
            simulation_mode=True,
            strategy=strategy,
            strategy_options=options,
            quiet=True,
            seed=seed
        )
        record.update(_record_of(_current))
        if record["stopped"] == "budget" and record["evaluations"] < max_fevals:
            record["stopped"] = "strategy_ended"  # e.g. dual annealing's maxfun, which counts revisits too
        record["kt_simulated_s_total"] = float(env.get("simulated_time", 0)) / 1000.0
    except Exception as e:  # a strategy that fails is recorded, and the others go on
        record["error"] = "%s: %s" % (type(e).__name__, e)
        if _current is not None:
            record.update(_record_of(_current))
        record["stopped"] = "error"
    record["wall_s"] = round(time.monotonic() - started, 3)
    return record


def _record_of(progress):
    rec = {
        "evaluations": len(progress.seen),
        "best_ms": progress.best_ms if progress.seen else None,
        "stopped": progress.stopped,
    }
    for t in THRESHOLDS:
        hit = progress.hit.get(t)
        rec["evals_to_%d" % t] = hit[0] if hit else None
        rec["simulated_s_to_%d" % t] = round(hit[1] / 1000.0, 3) if hit else None
        rec["strategy_s_to_%d" % t] = round(hit[2] / 1000.0, 3) if hit else None
    return rec


def spread(values):
    """Median, 25th and 75th percentile (nearest rank), min and max; a run that never got there counts as
    infinitely late, so a median of None means fewer than half the runs got there."""
    xs = sorted(float("inf") if v is None else v for v in values)
    if not xs:
        return None
    n = len(xs)
    fin = lambda x: None if x == float("inf") else x
    return {
        "median": fin(statistics.median(xs)),
        "p25": fin(xs[(n - 1) // 4]),
        "p75": fin(xs[-1 - (n - 1) // 4]),
        "min": fin(xs[0]),
        "max": fin(xs[-1]),
        "reached": sum(v is not None for v in values),
        "runs": n,
    }


def summarise(runs):
    out = {}
    for key in (
        ["evals_to_%d" % t for t in THRESHOLDS]
        + ["simulated_s_to_%d" % t for t in THRESHOLDS]
        + ["strategy_s_to_1", "wall_s"]
    ):
        out[key] = spread([r.get(key) for r in runs])
    out["errors"] = sorted({r["error"] for r in runs if "error" in r})
    return out


def kernel_tuner_version():
    from importlib.metadata import version

    return version("kernel_tuner")


def library_versions():
    """The versions of what the strategies draw from: scipy's optimisers and numpy's generators decide the
    runs of dual_annealing and others, so a run repeats only under the same ones."""
    from importlib.metadata import PackageNotFoundError, version

    found = {"python": "%d.%d.%d" % sys.version_info[:3]}
    for name in ("numpy", "scipy", "scikit-learn"):
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            found[name] = None
    return found


def prepare_spaces(args):
    """Exports every sweep asked for, converts the space files and adds the cache files given; one that cannot
    be used (an export that fails, with tiletune's own message, a malformed space file, or a cache without a
    single time) is recorded as such."""
    os.makedirs(args.workdir, exist_ok=True)
    sweeps = (args.sweep or reference_sweeps(args.db)) if args.db else []
    sources = [("sweep %d" % i, {"sweep_id": i}) for i in sweeps]
    sources += [(path, {}) for path in args.cache]
    sources += [(path, {"space_file": path}) for path in args.space]
    spaces = []
    for name, space in sources:
        try:
            space.update(describe_space(cache_of(name, space, args), args.workdir))
        except (OSError, ValueError, KeyError, TypeError) as e:
            text = "not a Kernel Tuner cache: field %s is missing" % e if isinstance(e, KeyError) else str(e)
            space.update(name=name, error=text)
            print("%s: %s" % (name, text), file=sys.stderr)
        spaces.append(space)
    return spaces


def cache_of(name, space, args):
    """The Kernel Tuner cache of a source: the sweep exported, the space file written as one, or the file."""
    if "sweep_id" in space:
        path, error = export_sweep(args.tiletune, args.db, space["sweep_id"], args.workdir)
        if error:
            raise ValueError("export failed: " + error)
        return path
    if "space_file" in space:
        return write_space_cache(name, args.templates, args.workdir)
    return name


def search_space(space, args, pool):
    budget = args.max_fevals or space["runnable"]
    space["budget_max_fevals"] = budget
    space["strategies"] = {}
    for strategy in args.strategy or DEFAULT_STRATEGIES:
        slim = {"cache": space["cache"], "optimum_ms": space["optimum_ms"]}
        jobs = [(slim, strategy, seed, budget, args.run_wall_limit) for seed in range(args.seeds)]
        runs = pool.map(run_one, jobs, chunksize=1)
        space["strategies"][strategy] = {"runs": runs, "summary": summarise(runs)}
        s = space["strategies"][strategy]["summary"]["evals_to_1"]
        print(
            "%s %s: %s: evaluations to 1%%: median %s, reached %d/%d, %.0f s"
            % (
                space["family"],
                space["size"],
                strategy,
                s["median"],
                s["reached"],
                s["runs"],
                sum(r["wall_s"] for r in runs),
            ),
            file=sys.stderr,
        )


def cell(s, digits=0):
    """A spread as 'median [p25-p75]'; '-' where fewer than half of the runs got there."""
    if s is None or s["median"] is None:
        return "- (%d/%d)" % (s["reached"], s["runs"]) if s else "-"
    f = lambda x: "inf" if x is None else "%.*f" % (max(digits, 0 if x == int(x) else 1), x)
    text = "%s [%s-%s]" % (f(s["median"]), f(s["p25"]), f(s["p75"]))
    return text if s["reached"] == s["runs"] else "%s (%d/%d)" % (text, s["reached"], s["runs"])


def markdown(doc):
    lines = [
        "Kernel Tuner %s strategies in simulation mode on tiletune's brute-force sweeps: unique "
        "configurations measured until the best-so-far is within 1%%, 2%% and 5%% of the sweep's optimum, "
        "and Kernel Tuner's simulated seconds (compile + benchmark, one at a time) until within 1%%. "
        "Median [25th-75th percentile] over %d seeds; (k/n): only k of n runs got there within the budget "
        "(%s); '-': fewer than half did." % (doc["kernel_tuner_version"], doc["seeds"], doc["budget"]),
        "",
        "| space | runnable | optimum ms | strategy | evals to 1% | to 2% | to 5% | simulated s to 1% |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for sp in doc["spaces"]:
        if "error" in sp:
            lines.append("| %s | %s | | | | | | |" % (sp["name"], sp["error"]))
            continue
        name = "`%s` %s%s" % (sp["family"], sp["size"], " (%s)" % sp["args"] if sp["args"] else "")
        head = "| %s | %d | %.4f |" % (name, sp["runnable"], sp["optimum_ms"])
        lines.append(
            head + " every runnable one | %d | | | %.0f |" % (sp["runnable"], sp["brute_force_simulated_s"])
        )
        for strategy, res in sp.get("strategies", {}).items():
            s = res["summary"]
            if s["errors"]:  # shown, not hidden: the runs that failed count as never getting there
                strategy += " (failed: %s)" % "; ".join(s["errors"])
            lines.append(
                "| | | | %s | %s | %s | %s | %s |"
                % (
                    strategy,
                    cell(s["evals_to_1"]),
                    cell(s["evals_to_2"]),
                    cell(s["evals_to_5"]),
                    cell(s["simulated_s_to_1"], 1),
                )
            )
    return "\n".join(lines) + "\n"


def write_outputs(doc, args):
    for path, text in ((args.json, json.dumps(doc, indent=1) + "\n"), (args.markdown, markdown(doc))):
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        with open(path + ".tmp", "w") as f:
            f.write(text)
        os.replace(path + ".tmp", path)


def main(argv):
    args = parse_args(argv)
    doc = {
        "kernel_tuner_version": kernel_tuner_version(),
        "libraries": library_versions(),
        "database": args.db,
        "seeds": args.seeds,
        "thresholds_percent": list(THRESHOLDS),
        "budget": "max_fevals = %s" % (args.max_fevals or "the number of runnable configurations"),
        "run_wall_limit_s": args.run_wall_limit,
        "spaces": prepare_spaces(args),
    }
    started = time.monotonic()
    with multiprocessing.get_context("fork").Pool(args.jobs, maxtasksperchild=20) as pool:
        for space in doc["spaces"]:
            if "error" not in space:
                search_space(space, args, pool)
                write_outputs(doc, args)  # after each space, so a stopped run keeps what it finished
    doc["wall_s"] = round(time.monotonic() - started, 1)
    write_outputs(doc, args)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

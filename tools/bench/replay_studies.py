#!/usr/bin/env python3
"""Studies of search ideas on the committed reference spaces (bench/spaces/*.csv), without a GPU.

Each asks how soon an idea would put a configuration within 1% of a space's best in front of the search:

  zero-shot   a model of the plan features alone (threads, blocks, shared memory, occupancy, waves), trained
              on the spaces of the other families, ranks a space before anything of it is measured
  sizes       a model trained on two gemm_regtile sizes ranks the third (parameters, plan features, or both)
  hill-climb  a greedy walk over one-parameter neighbours, started from every configuration 1 to 5% off
  patience    guided stops once the last P measurements found nothing 0.5% faster (needs the curves that
              'tiletune replay --whole-budget --curves F.json' writes)

Needs numpy and xgboost (pip install numpy xgboost). Prints one line per space.
"""
import argparse
import glob
import json
import math
import os
import statistics

from kt_compare import read_space_file

PLAN = ["threads", "log2_blocks", "smem_kib", "blocks_per_sm", "occupancy", "waves", "last_wave_fill"]


def load(path):
    """(family, parameter names, rows as read_space_file gives them, times with inf for failures)."""
    _, family, rows = read_space_file(path)
    times = [median_ms if outcome == "ok" else math.inf for _, outcome, median_ms, *_ in rows]
    return family, list(rows[0][0]), rows, times


def first_within(order, times, tolerance=1.01):
    """How many configurations of `order` come up to and including the first within `tolerance` of the best."""
    best = min(times)
    return next(k + 1 for k, i in enumerate(order) if times[i] <= best * tolerance)


def log_ratio(times):
    best = min(times)
    finite = [math.log(t / best) for t in times if math.isfinite(t)]
    worst = max(finite) + 0.7
    return [math.log(t / best) if math.isfinite(t) else worst for t in times]


def rank_by_model(x_train, y_train, x):
    import numpy as np
    import xgboost as xgb

    model = xgb.XGBRegressor(n_estimators=200, max_depth=4, learning_rate=0.1)
    model.fit(np.array(x_train, dtype=float), np.array(y_train, dtype=float))
    return list(np.argsort(model.predict(np.array(x, dtype=float)), kind="stable"))


def plan_rows(rows):
    return [[plan.get(p, math.nan) for p in PLAN] for *_, plan in rows]


def param_rows(rows, params):
    """Each parameter as guided's model sees it: log2 where it is at least 1, else the value less 1."""
    return [[math.log2(v[p]) if v[p] >= 1 else v[p] - 1 for p in params] for v, *_ in rows]


def zero_shot(spaces):
    loaded = {}
    for path in spaces:
        family, _, rows, times = load(path)
        loaded[path] = (family.split("_")[0], plan_rows(rows), times)
    for path, (kind, x, times) in loaded.items():
        x_train, y_train = [], []
        for kind2, x2, times2 in loaded.values():
            if kind2 != kind:  # no gemm space learns from another gemm
                x_train += x2
                y_train += log_ratio(times2)
        order = rank_by_model(x_train, y_train, x)
        good = sum(t <= min(times) * 1.01 for t in times)
        print(f"{os.path.basename(path):42s} {len(times):5d} configurations, {good:2d} within 1%: "
              f"the model's first within 1% is its {first_within(order, times)}th, "
              f"at random expected {len(times) / (good + 1):.0f}th")


def sizes(spaces):
    # Per space, once: its rows by each feature set, and its times.
    loaded = {}
    for path in spaces:
        _, params, rows, times = load(path)
        by_params, by_plan = param_rows(rows, params), plan_rows(rows)
        features = {"parameters": by_params, "plan": by_plan, "both": [u + v for u, v in zip(by_params, by_plan)]}
        loaded[path] = (features, times)
    for target, (features, times) in loaded.items():
        others = [p for p in loaded if p != target]
        for i, a in enumerate(others):
            for b in others[i + 1:]:
                out = []
                for name in ("parameters", "plan", "both"):
                    x_train = loaded[a][0][name] + loaded[b][0][name]
                    y_train = log_ratio(loaded[a][1]) + log_ratio(loaded[b][1])
                    order = rank_by_model(x_train, y_train, features[name])
                    out.append(f"{name} {first_within(order, times)}")
                print(f"{os.path.basename(target)} from {os.path.basename(a)} and {os.path.basename(b)}: "
                      + ", ".join(out))


def hill_climb(spaces):
    for path in spaces:
        _, params, rows, times = load(path)
        table = {tuple(v[p] for p in params): t for (v, *_), t in zip(rows, times)}
        values = [sorted({k[i] for k in table}) for i in range(len(params))]
        best = min(times)

        def neighbours(key):
            return [key[:i] + (v,) + key[i + 1:] for i in range(len(params)) for v in values[i]
                    if v != key[i] and key[:i] + (v,) + key[i + 1:] in table]

        starts = [k for k, t in table.items() if 1.01 < t / best <= 1.05]
        reached, spent = 0, []
        for key in starts:
            seen, evaluations = {key}, 0
            while True:
                fresh = [n for n in neighbours(key) if n not in seen]
                seen.update(fresh)
                evaluations += len(fresh)
                step = min(fresh, key=table.get, default=None)
                if step is None or table[step] >= table[key]:
                    break
                key = step
            reached += table[key] <= best * 1.01
            spent.append(evaluations)
        median = statistics.median(spent) if spent else 0
        print(f"{os.path.basename(path):42s} from {len(starts)} starts 1-5% off, {reached} end within 1% "
              f"(median {median:g} measurements)")


def patience(curve_files, waits=(30, 40, 60), least=48):
    for path in curve_files:
        with open(path) as f:
            space = json.load(f)["spaces"][0]
        runs = space["strategies"]["guided"]
        best = space["best_ms"]
        line = [f"{os.path.basename(path):34s} within 1% at the end {sum(r['curve'][-1][2] <= best * 1.01 for r in runs)}"
                f"/{len(runs)}"]
        for wait in waits:
            stops = []
            for r in runs:
                curve, last, stop = r["curve"], 0, r["curve"][-1]
                for i, (evaluations, seconds, best_ms, *_) in enumerate(curve):
                    if i and best_ms < curve[i - 1][2] * 0.995:
                        last = evaluations
                    if evaluations - last >= wait and evaluations >= least:
                        stop = (evaluations, seconds, best_ms)
                        break
                stops.append(stop)
            line.append(f"P{wait}: {statistics.median(s[0] for s in stops):g} measurements, "
                        f"{sum(s[2] <= best * 1.01 for s in stops)} within 1%")
        print(" | ".join(line))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("study", choices=["zero-shot", "sizes", "hill-climb", "patience"])
    parser.add_argument("files", nargs="*", help="space files (curve files for patience)")
    args = parser.parse_args()
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench", "spaces")
    files = args.files or {
        "zero-shot": sorted(glob.glob(os.path.join(root, "*.csv"))),
        "sizes": sorted(glob.glob(os.path.join(root, "gemm_regtile-*.csv"))),
        "hill-climb": sorted(glob.glob(os.path.join(root, "*.csv"))),
        "patience": [],
    }[args.study]
    {"zero-shot": zero_shot, "sizes": sizes, "hill-climb": hill_climb, "patience": patience}[args.study](files)


if __name__ == "__main__":
    main()

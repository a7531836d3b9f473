#!/usr/bin/env python3
"""tiletune's T4 export, checked by the auto-tuning community's own schemas.

Makes a database with every outcome and every kind of value (by importing a JSON document into it with the
built tiletune), exports it with `tiletune export --format t4`, and validates the document against the T4
results and metadata schemas that the kernel_tuner package ships, loaded through Kernel Tuner's own
`file_utils.output_file_schema`. Then checks what the schemas leave open: every stored result is there with its
configuration, runs and invalidity, and the metadata names the device. Exits non-zero, saying why, on any
failure; a Python without kernel_tuner and jsonschema is a failure too (tools/test installs them).
"""
import argparse
import json
import pathlib
import subprocess
import sys


def fail(message):
    print("t4_check: " + message, file=sys.stderr)
    sys.exit(1)


try:
    import jsonschema
    from kernel_tuner import file_utils
except ImportError as e:  # not skipped: the check is the point
    fail(f"needs the kernel_tuner and jsonschema packages ({e}); tools/test installs them")

OUTCOMES = {"ok": "correct", "pruned": "constraints", "compile_failed": "compile", "launch_failed": "runtime",
            "runtime_failed": "runtime", "timeout": "timeout", "wrong_result": "correctness"}


def document():
    """A tiletune export with one sweep holding every outcome."""
    device = {"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-t4-check", "arch": "sm_90", "sm_count": 132,
              "is_profile": False, "properties": {"driver_version": 13000, "runtime_version": 13000}}
    results = []
    for i, outcome in enumerate(OUTCOMES):
        r = {"params": {"TILE": 8 * (i + 1), "BLOCK_Y": 4}, "outcome": outcome, "reason": "" if outcome == "ok"
             else f"why {outcome}", "repetitions": 0}
        if outcome == "ok":
            r.update({"median_ms": 1.5, "min_ms": 1.25, "spread": 0.01, "repetitions": 3, "metric": 1234.5,
                      "metric_unit": "GFLOP/s", "registers": 64, "static_smem": 8192, "compile_ms": 950.25,
                      "measure_ms": 31.5, "times_ms": [1.5, 1.25, 1.75]})
        elif outcome == "wrong_result":
            r.update({"error": 0.25, "compile_ms": 870.0})
        results.append(r)
    sweep = {"uid": "0123456789abcdef0123456789abcdef", "device": device,
             "family": {"name": "gemm_tiled", "template_hash": "t4hash", "description": {}},
             "problem": {"size": "1000x1000x1000", "args": ""}, "kind": "sweep", "strategy": "brute_force",
             "status": "done", "started_at": "2026-01-01T00:00:00.000Z", "results": results}
    return {"format": "tiletune-export", "schema_version": 2, "sweeps": [sweep]}


def tiletune(binary, *args, cwd):
    run = subprocess.run([binary, *args], cwd=cwd, capture_output=True, text=True)
    if run.returncode != 0:
        fail(f"tiletune {' '.join(args)} exited {run.returncode}: {run.stderr.strip()}")
    return run.stdout


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tiletune", required=True)
    parser.add_argument("--workdir", required=True)
    args = parser.parse_args()
    args.tiletune = str(pathlib.Path(args.tiletune).resolve())
    work = pathlib.Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    db = work / "t4.db"
    for stale in work.glob("t4.db*"):
        stale.unlink()
    (work / "input.json").write_text(json.dumps(document()))
    tiletune(args.tiletune, "import", "--db", str(db), str(work / "input.json"), cwd=work)
    tiletune(args.tiletune, "export", "--db", str(db), "--format", "t4", "-o", str(work / "t4.json"), cwd=work)
    t4 = json.loads((work / "t4.json").read_text())

    for target in ("results", "metadata"):
        version, schema = file_utils.output_file_schema(target)
        try:
            jsonschema.validate(instance=t4, schema=schema)
        except jsonschema.ValidationError as e:
            fail(f"the export does not validate against Kernel Tuner's T4 {target} schema {version}: {e.message}")
        print(f"valid against kernel_tuner {target}-schema.json (T4 {version}, {len(t4.get(target, []))} "
              f"{'results' if target == 'results' else 'keys'})")

    results = t4["results"]
    if len(results) != len(OUTCOMES):
        fail(f"{len(results)} results, expected {len(OUTCOMES)}")
    for r in results:
        if r["invalidity"] != OUTCOMES[r["outcome"]]:
            fail(f"{r['outcome']} exported as invalidity {r['invalidity']}")
    ok = next(r for r in results if r["outcome"] == "ok")
    if ok["configuration"] != {"BLOCK_Y": 4, "TILE": 8} or ok["times"]["runtimes"] != [1.5, 1.25, 1.75]:
        fail(f"the ok result lost its configuration or runs: {ok}")
    if ok["times"]["compilation_time"] != 950.25:
        fail("the compile time is missing")
    units = {m["name"]: m["unit"] for m in ok["measurements"]}
    if units.get("time") != "ms" or units.get("throughput") != "GFLOP/s":
        fail(f"measurement units: {units}")
    wrong = next(r for r in results if r["outcome"] == "wrong_result")
    if wrong["correctness"] != 0 or ok["correctness"] != 1:
        fail("correctness is not 0 for the wrong result and 1 for the ok one")
    meta = t4["metadata"]
    if meta["hardware"]["hardware_description"][0]["name"] != "NVIDIA H100 80GB HBM3":
        fail("the metadata does not name the device")
    if "CUDA driver 13.0" not in meta["environment"]["requirements"]:
        fail(f"the driver version is missing: {meta['environment']['requirements']}")
    print(f"t4_check: {len(results)} results, every outcome mapped to T4's invalidity; ok")


if __name__ == "__main__":
    main()

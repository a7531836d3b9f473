#!/usr/bin/env python3
"""`tiletune import-space` on the T1 example that Kernel Tuner ships, checked against Kernel Tuner's reading.

1. Imports kernel_tuner's own test/test_T1_input.json (with its convolution.cu) from the package's source
   distribution, after validating it with Kernel Tuner's T1 reader (`file_utils.get_input_file`).
2. Every tunable's values in the family are the values Kernel Tuner evaluates from the T1 text, and the space
   tiletune counts is theirs: the full space is too large to plan, and `tiletune plan` says so with its size.
3. A smaller copy of the same file (the values cut to short literal lists, the condition and everything else
   kept) is planned without compiling: the configurations tiletune finds runnable are those that Kernel
   Tuner's own search space (`kernel_tuner.searchspace.Searchspace`, with the same 1024-thread limit) holds.
4. The example's kernel, a C++ (not extern "C") kernel with constant memory, compiles with NVRTC at the
   example's default configuration, with its registers known.
Exits non-zero, saying why, on any difference.
"""
import argparse
import copy
import json
import math
import pathlib
import re
import shutil
import subprocess
import sys


def fail(message):
    print("t1_example: " + message, file=sys.stderr)
    sys.exit(1)


try:
    from kernel_tuner import file_utils
    from kernel_tuner.searchspace import Searchspace
except ImportError as e:
    fail(f"needs the kernel_tuner package ({e}); tools/test installs it")


def run(binary, *args, cwd, expect_ok=True):
    done = subprocess.run([binary, *args], cwd=cwd, capture_output=True, text=True)
    if expect_ok and done.returncode != 0:
        fail(f"tiletune {' '.join(args)} exited {done.returncode}: {done.stderr.strip()}")
    return done


def kt_values(t1):
    """The tunables as Kernel Tuner evaluates them (tune_kernel_T1 evaluates each Values string)."""
    return {p["Name"]: list(eval(p["Values"])) for p in t1["ConfigurationSpace"]["TuningParameters"]}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tiletune", required=True)
    parser.add_argument("--kt-sources", required=True, help="kernel_tuner's unpacked source distribution")
    parser.add_argument("--workdir", required=True)
    args = parser.parse_args()
    args.tiletune = str(pathlib.Path(args.tiletune).resolve())
    example = pathlib.Path(args.kt_sources) / "test" / "test_T1_input.json"
    if not args.kt_sources or not example.is_file():
        fail(f"Kernel Tuner's T1 example is not at {example}; tools/test fetches the source distribution")
    work = pathlib.Path(args.workdir)
    shutil.rmtree(work, ignore_errors=True)
    (work / "src").mkdir(parents=True)
    shutil.copy(example, work / "src" / "test_T1_input.json")
    shutil.copy(example.parent / "convolution.cu", work / "src" / "convolution.cu")
    t1 = file_utils.get_input_file(work / "src" / "test_T1_input.json")  # validates against the T1 schema
    print("Kernel Tuner's T1 reader accepts the example")

    # 1. The example as it is.
    out = run(args.tiletune, "import-space", "src/test_T1_input.json", "-o", "templates", cwd=work).stdout
    print(out.strip())
    folder = next((work / "templates").iterdir())
    family = json.loads((folder / "family.json").read_text())
    if not (folder / "convolution.cu").is_file():
        fail("the kernel file was not copied into the family folder")
    values = kt_values(t1)
    for name, expected in values.items():
        got = family["parameters"].get(name, {}).get("values")
        if got != expected:
            fail(f"parameter {name}: tiletune has {got}, Kernel Tuner evaluates {expected}")
    print(f"every tunable's values are Kernel Tuner's ({len(values)} parameters)")

    # 2. The full space: counted as Kernel Tuner counts it, and too large to plan.
    size = math.prod(len(v) for v in values.values())
    plan = run(args.tiletune, "plan", "--templates", "templates", "--family", folder.name, "--device-profile",
               "h100", "--no-compile", cwd=work, expect_ok=False)
    shown = re.sub(r"[^0-9]", "", re.search(r"has ([0-9,]+) configurations", plan.stderr + plan.stdout).group(1)) \
        if re.search(r"has ([0-9,]+) configurations", plan.stderr + plan.stdout) else None
    if plan.returncode == 0 or shown != str(size):
        fail(f"plan of the full space ({size} configurations) should be refused with its size; got "
             f"exit {plan.returncode}: {plan.stderr.strip() or plan.stdout.strip()[:300]}")
    print(f"the full space has {size} configurations, as Kernel Tuner counts; plan refuses it: "
          f"{plan.stderr.strip()}")

    # 3. A smaller copy: the same condition, short literal value lists.
    small = copy.deepcopy(t1)
    cut = {"filter_width": "[3, 5, 7]", "filter_height": "[3, 15]", "block_size_x": "[16, 32, 48, 64, 128]",
           "block_size_y": "[8, 16, 32]", "tile_size_x": "[1, 2, 4]", "tile_size_y": "[1, 2]",
           "use_padding": "[0, 1]", "read_only": "[0, 1]"}
    for p in small["ConfigurationSpace"]["TuningParameters"]:
        p["Values"] = cut[p["Name"]]
        p["Default"] = eval(cut[p["Name"]])[0] if p["Default"] not in eval(cut[p["Name"]]) else p["Default"]
    (work / "src" / "small.json").write_text(json.dumps(small, indent=1))
    run(args.tiletune, "import-space", "src/small.json", "--name", "convolution_small", "-o", "templates",
        cwd=work)
    planned = json.loads(run(args.tiletune, "plan", "--templates", "templates", "--family", "convolution_small",
                             "--device-profile", "h100", "--no-compile", "--json", cwd=work).stdout)
    runnable = {tuple(sorted(c["params"].items())) for c in planned["configs"] if c["outcome"] == "ok"}
    restrictions = [c["Expression"] for c in small["ConfigurationSpace"]["Conditions"]]
    space = Searchspace(kt_values(small), restrictions, 1024)
    names = list(kt_values(small))
    theirs = {tuple(sorted(zip(names, config))) for config in space.list}
    if runnable != theirs:
        only_ours = sorted(runnable - theirs)[:3]
        only_theirs = sorted(theirs - runnable)[:3]
        fail(f"tiletune finds {len(runnable)} runnable, Kernel Tuner's search space holds {len(theirs)}; "
             f"only tiletune: {only_ours}; only Kernel Tuner: {only_theirs}")
    print(f"the reduced space: {len(planned['configs'])} configurations, {len(runnable)} runnable, the same "
          f"set as Kernel Tuner's Searchspace ({space.size})")

    # 4. The example's kernel at its defaults, compiled with NVRTC.
    one = copy.deepcopy(t1)
    for p in one["ConfigurationSpace"]["TuningParameters"]:
        p["Values"] = f"[{p['Default']}]"
    (work / "src" / "one.json").write_text(json.dumps(one, indent=1))
    run(args.tiletune, "import-space", "src/one.json", "--name", "convolution_one", "-o", "templates", cwd=work)
    compiled = json.loads(run(args.tiletune, "plan", "--templates", "templates", "--family", "convolution_one",
                              "--device-profile", "h100", "--json", cwd=work).stdout)
    config = compiled["configs"][0]
    if config["outcome"] != "ok" or not config["registers"]:
        fail(f"the example's kernel at its defaults did not compile with its resources known: {config}")
    print(f"the example's kernel compiles with NVRTC at its defaults: {config['registers']} registers, "
          f"{config['static_smem']} bytes of static shared memory")
    print("t1_example: ok")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""The measured kernel called from Python (PyTorch tensors) against the sweep's stored median and the vendor
baseline in one process: torch.matmul (cuBLAS) for GEMM families, a device-to-device copy for 1D
convolutions, each run timed alone between CUDA events after an L2 flush (as the sweep times) and a short
spin that keeps the GPU busy while Python enqueues, runtime and baseline alternating; the time from a fresh
Runtime's kernel() to the end of its first launch; and the host time of one call through the package (with
its array checks), through launch_pointers (raw pointers), and of torch's own zero_() for scale, on a small
problem, 500 calls (fewer than the launch queue holds, so that the host's time is measured).

    runtime_bench.py (--db FILE | --bundle DIR) --family F --size S [--args A] [--reps N] [--json OUT]
"""

import argparse
import json
import statistics
import time

import torch

import tiletune


def quartiles(times):
    q = statistics.quantiles(times, n=4, method="inclusive")
    median = statistics.median(times)
    return {"median_ms": median, "p25_ms": q[0], "p75_ms": q[2], "spread": (q[2] - q[0]) / median}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--db")
    p.add_argument("--bundle")
    p.add_argument("--family", required=True)
    p.add_argument("--size", required=True)
    p.add_argument("--args", default="")
    p.add_argument("--reps", type=int, default=50)
    p.add_argument("--json")
    o = p.parse_args()
    opts = {"bundle": o.bundle} if o.bundle else {"database": o.db}
    torch.cuda.init()
    torch.empty(1, device="cuda")
    rt = tiletune.Runtime(**opts)
    kernel = rt.kernel(o.family, o.size, o.args)
    arrays = {}
    for b in kernel.buffers:
        assert b["type"] == "float", b
        arrays[b["name"]] = torch.rand(b["count"], device="cuda") * 2 - 1
    for c in kernel.constant_info:
        kernel.set_constant(c["name"], (torch.rand(c["count"]) * 2 - 1).tolist())

    gemm = {"A", "B", "C"} <= set(arrays)
    if gemm:
        m, n, k = (int(x) for x in o.size.split("x"))
        a2, b2, c2 = arrays["A"].view(m, k), arrays["B"].view(k, n), arrays["C"].view(m, n)
        baseline_name = "torch.matmul (cuBLAS)"
        def baseline():
            torch.matmul(a2, b2, out=c2)
    else:
        baseline_name = "copy_ (device to device)"
        def baseline():
            arrays["out"].copy_(arrays["in"])

    # Fresh Runtime: kernel() to the end of the first launch.
    fresh = tiletune.Runtime(**opts)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    first = fresh.kernel(o.family, o.size, o.args)
    for c in first.constant_info:
        first.set_constant(c["name"], [0.2] * c["count"])
    first(**arrays)
    torch.cuda.synchronize()
    first_ms = (time.perf_counter() - t0) * 1e3

    for _ in range(5):
        kernel(**arrays)
        baseline()
    torch.cuda.synchronize()
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    flush = torch.empty(max(2 * l2, 64 << 20) // 4, device="cuda")

    def timed(fn):
        # A spin of about 50 us first keeps the GPU busy while Python enqueues: the events then time the
        # kernel, not the call (whose host time is measured below).
        torch.cuda._sleep(100_000)
        flush.zero_()
        e0.record()
        fn()
        e1.record()
        e1.synchronize()
        return e0.elapsed_time(e1)

    rt_times, base_times = [], []
    for _ in range(o.reps):
        rt_times.append(timed(lambda: kernel(**arrays)))
        base_times.append(timed(baseline))
    run = quartiles(rt_times)
    base = quartiles(base_times)

    # Host time per call, 500 back to back on a small problem of the same family.
    small_size = "256x256x256" if gemm else "65536"
    small = rt.kernel(o.family, small_size, o.args)
    small_arrays = {b["name"]: torch.zeros(b["count"], device="cuda") for b in small.buffers}
    pointers = [small_arrays[b["name"]].data_ptr() for b in small.buffers]
    stream = torch.cuda.current_stream().cuda_stream

    def host_us(fn):
        torch.cuda.synchronize()
        t = time.perf_counter()
        for _ in range(500):
            fn()
        us = (time.perf_counter() - t) * 1e6 / 500
        torch.cuda.synchronize()
        return us

    for c in small.constant_info:
        small.set_constant(c["name"], [0.1] * c["count"])
    zeros = small_arrays[small.buffers[0]["name"]]
    host_us(lambda: small.launch_pointers(pointers, stream))  # warm-up
    call_us = host_us(lambda: small(**small_arrays))
    positional = [small_arrays[b["name"]] for b in small.buffers]
    positional_us = host_us(lambda: small(*positional))
    pointers_us = host_us(lambda: small.launch_pointers(pointers, stream))
    torch_us = host_us(lambda: zeros.zero_())

    stored = kernel.stored_median_ms or 0.0
    result = {
        "family": o.family, "size": o.size, "args": o.args, "device": torch.cuda.get_device_name(),
        "params": kernel.params, "source": first.source, "match": kernel.match, "reps": o.reps,
        "stored_median_ms": stored, "runtime": run, "baseline": baseline_name, "baseline_time": base,
        "runtime_over_stored": run["median_ms"] / stored if stored else None,
        "runtime_over_baseline": run["median_ms"] / base["median_ms"],
        "first_launch_ms": first_ms, "load_ms": first.load_ms,
        "host_us": {"call_named": call_us, "call_positional": positional_us, "launch_pointers": pointers_us,
                    "torch_zero_": torch_us, "small_size": small_size},
    }
    print(f"{o.family} {o.size} {o.args} on {result['device']}: {kernel.params} ({kernel.match})")
    print(f"python call median {run['median_ms']:.4f} ms (spread {run['spread']:.3f}), the sweep's median "
          f"{stored:.4f} ms: ratio {result['runtime_over_stored']:.4f}")
    print(f"{baseline_name} median {base['median_ms']:.4f} ms (spread {base['spread']:.3f}): runtime / baseline "
          f"{result['runtime_over_baseline']:.4f}")
    print(f"first launch from a fresh Runtime ({first.source}): {first_ms:.2f} ms (loading {first.load_ms:.2f} ms)")
    print(f"host time per call at {small_size}: kernel(**named) {call_us:.2f} us, kernel(*positional) "
          f"{positional_us:.2f} us, launch_pointers {pointers_us:.2f} us; torch zero_() {torch_us:.2f} us")
    if o.json:
        with open(o.json, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()

"""The Python package on a GPU: a sweep through the tiletune command, then the measured kernel called on
PyTorch tensors and CuPy arrays, every output element compared with a float64 product, outputs poisoned
first; the same kernel from a bundle; the refusals of a call with the wrong arrays. Skipped without a GPU."""

import os
from pathlib import Path

import pytest

import tiletune
from conftest import run

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA GPU (torch.cuda.is_available() is False)", allow_module_level=True)


@pytest.fixture(scope="module")
def swept(tmp_path_factory) -> Path:
    work = tmp_path_factory.mktemp("swept")
    env = {**os.environ, "TILETUNE_CACHE": str(work / "cache")}
    r = run("sweep", "--family", "gemm_tiled", "--size", "1000x1000x777", "--strategy", "random", "--budget",
            "12", "--min-reps", "3", "--max-reps", "10", "--db", "t.db", cwd=work, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    r = run("export", "--format", "bundle", "--db", "t.db", "-o", "bundle", cwd=work, env=env)
    assert r.returncode == 0, r.stderr
    return work


def expect_gemm(kernel: tiletune.Kernel, m: int, n: int, k: int, make) -> None:
    """C = A B through the kernel on arrays `make` turns torch tensors into, against float64 on the GPU."""
    gen = torch.Generator(device="cuda").manual_seed(m * 7 + n)
    a = torch.rand(m, k, device="cuda", generator=gen) * 2 - 1
    b = torch.rand(k, n, device="cuda", generator=gen) * 2 - 1
    c = torch.full((m, n), float("nan"), device="cuda")
    ca, cb, cc = make(a), make(b), make(c)
    kernel(A=ca, B=cb, C=cc)
    torch.cuda.synchronize()
    got = torch.as_tensor(cc, device="cuda") if not isinstance(cc, torch.Tensor) else cc
    want = a.double() @ b.double()
    scale = a.double().abs() @ b.double().abs()
    bad = ~((got.double() - want).abs() <= 1e-4 * scale.clamp(min=1.0))
    assert int(bad.sum()) == 0, f"{int(bad.sum())} wrong of {m * n}"


def test_torch_tensors_on_the_measured_kernel(swept: Path) -> None:
    rt = tiletune.Runtime(swept / "t.db", cache=swept / "cache")
    tuned = rt.kernel("gemm_tiled", "1000x1000x777")
    assert tuned.match == "exact" and tuned.source == "cache"
    best = tiletune.lookup(swept / "t.db", "gemm_tiled", torch.cuda.get_device_name(), "", "1000x1000x777")
    assert tuned.params == best["params"] and tuned.stored_median_ms == best["median_ms"]
    expect_gemm(tuned, 1000, 1000, 777, lambda t: t)
    other = rt.kernel("gemm_tiled", "333x517x250")
    assert other.match == "nearest_size" and other.params == tuned.params
    expect_gemm(other, 333, 517, 250, lambda t: t)
    # Positional, in buffers order, on a stream of the caller's.
    a = torch.rand(333, 250, device="cuda")
    b = torch.rand(250, 517, device="cuda")
    c = torch.full((333, 517), float("nan"), device="cuda")
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        assert tiletune._stream_of([a]) == stream.cuda_stream
        other(a, b, c)
    stream.synchronize()
    assert torch.allclose(c, a @ b, rtol=1e-4, atol=1e-4)


def test_cupy_arrays_on_the_measured_kernel(swept: Path) -> None:
    cupy = pytest.importorskip("cupy")
    rt = tiletune.Runtime(swept / "t.db", cache=swept / "cache")
    expect_gemm(rt.kernel("gemm_tiled", "1000x1000x777"), 1000, 1000, 777, lambda t: cupy.asarray(t))
    k = rt.kernel("gemm_tiled", "64x64x64")
    a = cupy.zeros((64, 64), dtype=cupy.float32)
    with pytest.raises(tiletune.Error, match="the kernel takes float, the array holds <f8"):
        k(a, a, cupy.zeros((64, 64)))
    with pytest.raises(tiletune.Error, match="not contiguous"):
        k(a, a, cupy.zeros((64, 128), dtype=cupy.float32)[:, ::2])


def test_the_bundle_launches_the_same_kernel_without_compiling(swept: Path) -> None:
    rt = tiletune.Runtime(bundle=swept / "bundle")
    k = rt.kernel("gemm_tiled", "1000x1000x777")
    assert k.source == "bundle" and k.match == "exact" and k.compile_ms == 0
    db = tiletune.Runtime(swept / "t.db", cache=swept / "cache").kernel("gemm_tiled", "1000x1000x777")
    assert k.params == db.params and k.grid == db.grid and k.block == db.block
    expect_gemm(k, 1000, 1000, 777, lambda t: t)
    expect_gemm(rt.kernel("gemm_tiled", "129x65x33"), 129, 65, 33, lambda t: t)


def test_a_call_with_the_wrong_arrays_launches_nothing(swept: Path) -> None:
    k = tiletune.Runtime(swept / "t.db", cache=swept / "cache").kernel("gemm_tiled", "64x64x64")
    a, b = torch.rand(64, 64, device="cuda"), torch.rand(64, 64, device="cuda")
    c = torch.full((64, 64), 7.0, device="cuda")
    with pytest.raises(tiletune.Error, match="no array for buffer C"):
        k(A=a, B=b)
    with pytest.raises(tiletune.Error, match="no buffer D"):
        k(A=a, B=b, C=c, D=c)
    with pytest.raises(tiletune.Error, match="the kernel takes float, the tensor holds torch.float64"):
        k(a, b, c.double())
    with pytest.raises(tiletune.Error, match="touches 4096 elements, the tensor has 4095"):
        k(a, b, c.flatten()[:4095])
    with pytest.raises(tiletune.Error, match="not contiguous"):
        k(a, b, c.t().contiguous().t())
    with pytest.raises(tiletune.Error, match="the tensor is on cpu"):
        k(a, b, c.cpu())
    torch.cuda.synchronize()
    assert bool((c == 7.0).all())  # nothing ran

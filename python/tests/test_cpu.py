"""The Python package without a GPU: lookups and stored results as records, the runtime's one-line errors,
bundles, and the array checks a kernel call makes before it launches."""

import os
from pathlib import Path

import pytest

import tiletune
from tiletune import _pointer_of
from conftest import H100, run


def test_lookup_follows_the_clients_fallbacks(tuned_db: Path) -> None:
    exact = tiletune.lookup(tuned_db, "gemm_tiled", H100, "sm_90", "1000x1000x1000")
    assert exact["match"] == "exact"
    assert exact["params"] == {"BLOCK_Y": 16, "TILE_K": 32, "TILE_WIDTH": 32}
    assert exact["median_ms"] == pytest.approx(0.4)
    assert exact["metric_unit"] == "GFLOP/s"
    near = tiletune.lookup(tuned_db, "gemm_tiled", H100, "sm_90", "2000x2000x2000")
    assert near["match"] == "nearest_size" and near["size"] == "1000x1000x1000"
    arch = tiletune.lookup(tuned_db, "gemm_tiled", "NVIDIA H200", "sm_90", "1000x1000x1000")
    assert arch["match"] == "same_arch" and arch["device"] == H100
    none = tiletune.lookup(tuned_db, "gemm_tiled", "NVIDIA A100-SXM4-80GB", "sm_80", "1000x1000x1000")
    assert none["match"] == "not_found" and none["median_ms"] is None


def test_results_are_plain_records_ready_for_pandas(tuned_db: Path) -> None:
    sweeps = tiletune.sweeps(tuned_db)
    assert len(sweeps) == 1
    assert sweeps[0]["family"] == "gemm_tiled" and sweeps[0]["device"] == H100 and sweeps[0]["results"] == 3
    records = tiletune.results(tuned_db)
    assert [r["outcome"] for r in records] == ["ok", "ok", "compile_failed"]  # best first
    assert records[0]["median_ms"] == pytest.approx(0.4) and records[1]["median_ms"] == pytest.approx(0.5)
    assert records[0]["params"] == {"BLOCK_Y": 16, "TILE_K": 32, "TILE_WIDTH": 32}
    assert records[2]["median_ms"] is None
    assert all(isinstance(r, dict) for r in records)
    assert tiletune.results(tuned_db, limit=1) == records[:1]
    assert tiletune.results(tuned_db, family="gemm_naive") == []
    assert tiletune.results(tuned_db, sweep=sweeps[0]["sweep"]) == records
    pandas = pytest.importorskip("pandas")
    frame = pandas.json_normalize(records)
    assert list(frame["params.TILE_WIDTH"]) == [32, 16, 16]
    assert frame["median_ms"].iloc[0] == pytest.approx(0.4)


def test_errors_are_one_line(tmp_path: Path, tuned_db: Path) -> None:
    with pytest.raises(tiletune.Error, match="missing.db"):
        tiletune.lookup(tmp_path / "missing.db", "gemm_tiled", H100, "sm_90", "10x10x10")
    with pytest.raises(tiletune.Error, match="bad problem"):
        tiletune.lookup(tuned_db, "gemm_tiled", H100, "sm_90", "10xx10")
    with pytest.raises(tiletune.Error, match="no sweep 99"):
        tiletune.results(tuned_db, sweep=99)
    (tmp_path / "junk.db").write_bytes(b"not a database at all" * 100)
    with pytest.raises(tiletune.Error) as junk:
        tiletune.results(tmp_path / "junk.db")
    assert "\n" not in str(junk.value)
    rt = tiletune.Runtime(tmp_path / "missing.db")
    with pytest.raises(tiletune.Error, match="unknown family 'nope'"):
        rt.kernel("nope", "10x10x10")
    with pytest.raises(tiletune.Error, match="gemm_tiled: "):
        rt.kernel("gemm_tiled", "0x10x10")
    with pytest.raises(tiletune.Error) as e:
        rt.kernel("gemm_tiled", "64x64x64")  # no GPU here, or with one the missing database
    assert "\n" not in str(e.value)
    assert not (tmp_path / "missing.db").exists()


def test_a_bundle_exported_by_the_command_is_what_the_runtime_reads(tmp_path: Path, tuned_db: Path) -> None:
    r = run("export", "--format", "bundle", "--db", str(tuned_db), "-o", "bundle", cwd=tmp_path,
            env={**os.environ, "TILETUNE_CACHE": str(tmp_path / "cache")})
    assert r.returncode == 0, r.stderr
    assert "1 configurations, 1 CUBINs" in r.stderr
    assert (tmp_path / "bundle" / "manifest.json").is_file()
    rt = tiletune.Runtime(bundle=tmp_path / "bundle")
    with pytest.raises(tiletune.Error, match="unknown family 'gemm_regtile'"):
        rt.kernel("gemm_regtile", "64x64x64")
    with pytest.raises(tiletune.Error, match="manifest.json"):
        tiletune.Runtime(bundle=tmp_path / "nowhere").kernel("gemm_tiled", "64x64x64")


class FakeArray:
    """An object that speaks __cuda_array_interface__, as CuPy arrays and PyTorch tensors do."""

    def __init__(self, shape, typestr="<f4", strides=None, readonly=False, pointer=0x1000):
        self.__cuda_array_interface__ = {"shape": shape, "typestr": typestr, "strides": strides,
                                         "data": (pointer, readonly), "version": 3}


FLOATS = {"name": "C", "type": "float", "element_bytes": 4, "count": 12, "role": "output"}


def test_a_call_checks_each_array_before_it_launches() -> None:
    assert _pointer_of("C", FakeArray((3, 4), pointer=0xABC0), FLOATS) == 0xABC0
    assert _pointer_of("C", FakeArray((3, 4), strides=(16, 4)), FLOATS) == 0x1000  # contiguous strides
    assert _pointer_of("C", 0x2000, FLOATS) == 0x2000  # a raw pointer is taken as it is
    with pytest.raises(tiletune.Error, match="the kernel takes float, the array holds <f8"):
        _pointer_of("C", FakeArray((3, 4), "<f8"), FLOATS)
    with pytest.raises(tiletune.Error, match="touches 12 elements, the array has 11"):
        _pointer_of("C", FakeArray((11,)), FLOATS)
    with pytest.raises(tiletune.Error, match="not contiguous"):
        _pointer_of("C", FakeArray((3, 4), strides=(32, 4)), FLOATS)
    with pytest.raises(tiletune.Error, match="read-only"):
        _pointer_of("C", FakeArray((3, 4), readonly=True), FLOATS)
    with pytest.raises(tiletune.Error, match="not a CUDA array"):
        _pointer_of("C", [1.0] * 12, FLOATS)


def test_the_package_says_its_version_and_finds_its_families() -> None:
    assert tiletune.__version__.count(".") == 2
    assert (Path(tiletune.__file__).parent / "kernel_templates" / "gemm_tiled" / "family.json").is_file()

"""Shared set-up of the Python tests: the tiletune command (TILETUNE_BIN, else on PATH) and a database made
from a Kernel Tuner cache file, so that the CPU tests need no GPU."""

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest


def tiletune_bin() -> str:
    found = os.environ.get("TILETUNE_BIN") or shutil.which("tiletune")
    if not found:
        pytest.skip("the tiletune command is not there (set TILETUNE_BIN)")
    return found


def run(*args: str, cwd: Path, env: dict = None) -> subprocess.CompletedProcess:
    return subprocess.run([tiletune_bin(), *args], cwd=cwd, capture_output=True, text=True, env=env)


H100 = "NVIDIA H100 80GB HBM3"


@pytest.fixture
def tuned_db(tmp_path: Path) -> Path:
    """gemm_tiled at 1000x1000x1000 on the H100: two ok results (0.5 and 0.4 ms) and one failure."""
    cache = {
        "device_name": H100,
        "kernel_name": "gemm_tiled",
        "problem_size": [1000, 1000, 1000],
        "tune_params_keys": ["TILE_WIDTH", "BLOCK_Y", "TILE_K"],
        "tune_params": {"TILE_WIDTH": [16, 32], "BLOCK_Y": [16, 32], "TILE_K": [16, 32]},
        "objective": "time",
        "cache": {
            "16,16,16": {"TILE_WIDTH": 16, "BLOCK_Y": 16, "TILE_K": 16, "time": 0.5, "times": [0.52, 0.49, 0.5]},
            "32,16,32": {"TILE_WIDTH": 32, "BLOCK_Y": 16, "TILE_K": 32, "time": 0.4, "times": [0.39, 0.41, 0.4]},
            "16,32,16": {"TILE_WIDTH": 16, "BLOCK_Y": 32, "TILE_K": 16, "__error__": "CompilationFailedConfig"},
        },
    }
    (tmp_path / "cache.json").write_text(json.dumps(cache))
    r = run("import", "--format", "kernel_tuner", "cache.json", "--family", "gemm_tiled", "--db", "t.db",
            cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    return tmp_path / "t.db"

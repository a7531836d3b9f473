"""tiletune from Python: the configurations a tuning sweep measured, and the measured kernels themselves.

Tune once with the ``tiletune`` command, then from an application::

    import torch, tiletune
    rt = tiletune.Runtime("tiletune.db")            # or Runtime(bundle="bundle/") to compile nothing
    gemm = rt.kernel("gemm_regtile", "4096x4096x4096")
    a = torch.rand(4096, 4096, device="cuda"); b = torch.rand_like(a); c = torch.empty_like(a)
    gemm(A=a, B=b, C=c)                             # on torch's current stream

Stored results come back as plain records (dicts), ready for ``pandas.json_normalize``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

from . import _tiletune

__all__ = ["Error", "Kernel", "Runtime", "lookup", "results", "sweeps", "__version__"]

Error = _tiletune.Error
"""Every failure of tiletune, in one line (a RuntimeError)."""

__version__: str = _tiletune.version()

_templates = Path(__file__).parent / "kernel_templates"
if _templates.is_dir():
    _tiletune.set_templates(str(_templates))

PathLike = Union[str, "os.PathLike[str]"]

# The element types of the families' buffers, as __cuda_array_interface__ type strings.
_TYPESTR = {
    "float": "<f4",
    "double": "<f8",
    "half": "<f2",
    "bfloat16": None,  # no typestr of its own: checked by size only
    "int8": "|i1",
    "uint8": "|u1",
    "int32": "<i4",
    "uint32": "<u4",
    "int64": "<i8",
}


def lookup(database: PathLike, family: str, device: str, arch: str, size: str, args: str = "") -> Dict[str, Any]:
    """The best configuration of ``family`` for a device (its name as the driver reports it, and its arch,
    e.g. ``"sm_90"``) and a problem (``size`` like ``"1000x1000x1000"``, ``args`` like ``"mask_width=5"``),
    with the client's fallbacks: exact, nearest size, same architecture, not found. Keys: match, params,
    device, size, args, median_ms, metric, metric_unit, message."""
    return _tiletune.lookup(os.fspath(database), family, device, arch, size, args)


def sweeps(database: PathLike, family: str = "", device: str = "") -> List[Dict[str, Any]]:
    """The stored sweeps (and plans), newest first, as records."""
    return _tiletune.sweeps(os.fspath(database), family, device)


def results(
    database: PathLike, family: str = "", device: str = "", sweep: int = 0, limit: int = 0
) -> List[Dict[str, Any]]:
    """Every stored result of the selected sweeps as a record: sweep, family, device, arch, size, args, params
    (a dict), outcome, reason, repetitions, measured_at, and every stored value field: median_ms, min_ms,
    spread, metric, metric_unit, error, registers, static_smem, dynamic_smem, local_bytes, spill_bytes,
    threads_per_block, active_blocks, active_warps, occupancy_limiter, occupancy, sm_clock_mhz, compile_ms,
    measure_ms. Within a sweep, ok results come first, fastest first; ``limit`` keeps that many per sweep.
    ``pandas.json_normalize(results(db))`` gives one column per parameter (``params.TILE_WIDTH``)."""
    return _tiletune.results(os.fspath(database), family, device, sweep, limit)


_TORCH_TYPES: Dict[Any, str] = {}


def _is_torch(array: Any) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(array, torch.Tensor)


def _is_cupy(array: Any) -> bool:
    cupy = sys.modules.get("cupy")
    return cupy is not None and isinstance(array, cupy.ndarray)


def _torch_pointer(name: str, tensor: Any, info: Mapping[str, Any], device: Optional[int] = None) -> int:
    """A PyTorch tensor's pointer, checked through its own attributes (cheaper than the interface dict)."""
    if not _TORCH_TYPES:
        import torch

        _TORCH_TYPES.update({torch.float32: "float", torch.float64: "double", torch.float16: "half",
                             torch.bfloat16: "bfloat16", torch.int8: "int8", torch.uint8: "uint8",
                             torch.int32: "int32", torch.int64: "int64"})
        if hasattr(torch, "uint32"):
            _TORCH_TYPES[torch.uint32] = "uint32"
    if not tensor.is_cuda:
        raise Error(f"buffer {name}: the tensor is on {tensor.device}, not on a CUDA device")
    if device is not None and tensor.device.index != device:
        raise Error(f"buffer {name}: the tensor is on {tensor.device}, the kernel was loaded on cuda:{device}")
    if _TORCH_TYPES.get(tensor.dtype) != info["type"]:
        raise Error(f"buffer {name}: the kernel takes {info['type']}, the tensor holds {tensor.dtype}")
    if not tensor.is_contiguous():
        raise Error(f"buffer {name}: the tensor is not contiguous")
    if tensor.numel() < info["count"]:
        raise Error(f"buffer {name}: the kernel touches {info['count']} elements, the tensor has "
                    f"{tensor.numel()}")
    return tensor.data_ptr()


def _pointer_of(name: str, array: Any, info: Mapping[str, Any], device: Optional[int] = None) -> int:
    """The device pointer of a CuPy array, a PyTorch tensor or any object with __cuda_array_interface__,
    after checking its type, its size and that it is contiguous; an int is taken as a pointer as it is."""
    if isinstance(array, int):
        return array
    if _is_torch(array):
        return _torch_pointer(name, array, info, device)
    cai = getattr(array, "__cuda_array_interface__", None)
    if cai is None:
        raise Error(f"buffer {name}: {type(array).__name__} is not a CUDA array (no __cuda_array_interface__)")
    typestr = cai["typestr"]
    expected = _TYPESTR.get(info["type"])
    itemsize = int(typestr[2:])
    if (expected is not None and typestr != expected) or itemsize != info["element_bytes"]:
        raise Error(f"buffer {name}: the kernel takes {info['type']}, the array holds {typestr}")
    shape = tuple(cai["shape"])
    count = 1
    for extent in shape:
        count *= extent
    strides = cai.get("strides")
    if strides is not None and count > 1:
        expected_stride = itemsize
        for extent, stride in zip(reversed(shape), reversed(strides)):
            if extent != 1 and stride != expected_stride:
                raise Error(f"buffer {name}: the array is not contiguous")
            expected_stride *= extent
    if count < info["count"]:
        raise Error(f"buffer {name}: the kernel touches {info['count']} elements, the array has {count}")
    if cai.get("data", (0, False))[1]:
        if info["role"] != "input":
            raise Error(f"buffer {name}: the kernel writes it, and the array is read-only")
    return int(cai["data"][0])


def _stream_of(arrays: Sequence[Any]) -> int:
    """The current stream of the arrays' framework: PyTorch's for a tensor, CuPy's for a CuPy array, else
    the default stream."""
    for array in arrays:
        if _is_torch(array):
            return int(sys.modules["torch"].cuda.current_stream(array.device).cuda_stream)
        if _is_cupy(array):
            return int(sys.modules["cupy"].cuda.get_current_stream().ptr)
    return 0


def _stream_handle(stream: Any) -> int:
    if isinstance(stream, int):
        return stream
    for attribute in ("cuda_stream", "ptr", "handle"):
        value = getattr(stream, attribute, None)
        if value is not None:
            return int(value)
    raise Error(f"stream: {type(stream).__name__} is neither a stream handle nor a torch or CuPy stream")


class Kernel:
    """The measured configuration of a family for one GPU and problem, loaded and ready to launch.

    Call it with one CUDA array per buffer (``buffers`` names them, in order), by position or by name::

        kernel(a, b, c)  or  kernel(A=a, B=b, C=c)

    It launches on ``stream`` (a handle, or a torch or CuPy stream), by default on the current stream of the
    arrays' framework, and returns without waiting for the kernel."""

    def __init__(self, native: Any, runtime: "Runtime") -> None:
        self._native = native
        self._runtime = runtime  # the native runtime owns the kernel
        self._buffers = native.buffers
        self._names = [b["name"] for b in self._buffers]

    family: str = property(lambda self: self._native.family)  # type: ignore[assignment]
    device: int = property(lambda self: self._native.device)  # type: ignore[assignment]
    """The CUDA device it was loaded on (the current one when it was asked for)."""
    size: str = property(lambda self: self._native.size)  # type: ignore[assignment]
    args: str = property(lambda self: self._native.args)  # type: ignore[assignment]
    params: Dict[str, int] = property(lambda self: self._native.params)  # type: ignore[assignment]
    match: str = property(lambda self: self._native.match)  # type: ignore[assignment]
    """How the configuration was found: exact, nearest_size, same_arch or not_found (the defaults)."""
    message: str = property(lambda self: self._native.message)  # type: ignore[assignment]
    stored_median_ms: Optional[float] = property(lambda self: self._native.stored_median_ms)  # type: ignore[assignment]
    """The sweep's median for the problem it was tuned for."""
    source: str = property(lambda self: self._native.source)  # type: ignore[assignment]
    """Where its CUBIN came from: bundle, cache or compiled."""
    load_ms: float = property(lambda self: self._native.load_ms)  # type: ignore[assignment]
    compile_ms: float = property(lambda self: self._native.compile_ms)  # type: ignore[assignment]
    grid = property(lambda self: tuple(self._native.grid))
    block = property(lambda self: tuple(self._native.block))
    dynamic_smem: int = property(lambda self: self._native.dynamic_smem)  # type: ignore[assignment]
    constants: List[str] = property(lambda self: list(self._native.constants))  # type: ignore[assignment]

    @property
    def buffers(self) -> List[Dict[str, Any]]:
        """The buffers in argument order: name, type, element_bytes, count (elements it may touch), role."""
        return [dict(b) for b in self._buffers]

    @property
    def constant_info(self) -> List[Dict[str, Any]]:
        """The __constant__ symbols it declares: name, type, element_bytes, count."""
        return [dict(c) for c in self._native.constant_info]

    def set_constant(self, name: str, values: Any, stream: Any = None) -> None:
        """Copies host values (bytes, or anything numpy can take, e.g. a list of floats for a float constant)
        into the family's __constant__ symbol ``name``, such as a convolution's mask, ordered on ``stream``
        (a handle, or a torch or CuPy stream; default: the legacy default stream). The symbol is shared by
        every caller of this family and problem on this GPU: set it before the launches that read it."""
        if isinstance(values, (bytes, bytearray, memoryview)):
            data = bytes(values)
        else:
            import numpy

            info = next((c for c in self._native.constant_info if c["name"] == name), None)
            if info is None:
                raise Error(f"{self.family} declares no constant '{name}'")
            dtype = {"float": numpy.float32, "double": numpy.float64, "half": numpy.float16, "int8": numpy.int8,
                     "uint8": numpy.uint8, "int32": numpy.int32, "uint32": numpy.uint32,
                     "int64": numpy.int64}.get(info["type"])
            if dtype is None:
                raise Error(f"{self.family}: give constant {name} ({info['type']}) as bytes")
            data = numpy.ascontiguousarray(values, dtype=dtype).tobytes()
        self._native._set_constant(name, data, 0 if stream is None else _stream_handle(stream))

    def __call__(self, *arrays: Any, stream: Any = None, **named: Any) -> None:
        if arrays and named:
            raise Error(f"{self.family}: give the buffers by position or by name, not both")
        if named:
            unknown = sorted(set(named) - set(self._names))
            if unknown:
                raise Error(f"{self.family}: no buffer {unknown[0]} (buffers: {', '.join(self._names)})")
            missing = [n for n in self._names if n not in named]
            if missing:
                raise Error(f"{self.family}: no array for buffer {missing[0]}")
            arrays = tuple(named[n] for n in self._names)
        if len(arrays) != len(self._names):
            raise Error(f"{self.family}: {len(arrays)} arrays given, the kernel takes {len(self._names)} "
                        f"({', '.join(self._names)})")
        device = self._native.device
        pointers = [_pointer_of(n, a, b, device) for n, a, b in zip(self._names, arrays, self._buffers)]
        handle = _stream_of(arrays) if stream is None else _stream_handle(stream)
        self._native._launch(pointers, handle)

    def launch_pointers(self, pointers: Sequence[int], stream: int = 0) -> None:
        """Launches with raw device pointers in ``buffers`` order on a raw stream handle: no checks, the
        least overhead."""
        self._native._launch(list(pointers), stream)

    def __repr__(self) -> str:
        return (f"<tiletune.Kernel {self.family} {self.size}{' ' + self.args if self.args else ''} "
                f"{self.match} {self.params}>")


class Runtime:
    """Opens a database (or a bundle written by ``tiletune export --format bundle``) and hands out the
    measured kernels for the current CUDA device. Nothing is read until the first ``kernel()``.

    database: the tiletune database the sweeps wrote.
    families: folders of your own families, beside the built-in ones.
    cache: the compile cache the sweeps used (default: $TILETUNE_CACHE, else ~/.cache/tiletune).
    bundle: a bundle folder; then no database is read and nothing is compiled.
    capture: a file to record each problem served without an exact match in, once each, for
    ``tiletune sweep --captured`` (default: $TILETUNE_CAPTURE; "1" there means DATABASE.capture.jsonl).
    capture_inputs: also save the inputs of each newly captured problem's first launch as .npy files beside
    the capture file, for the sweep to tune on (default: $TILETUNE_CAPTURE_INPUTS=1)."""

    def __init__(
        self,
        database: PathLike = "tiletune.db",
        families: Sequence[PathLike] = (),
        cache: Optional[PathLike] = None,
        bundle: Optional[PathLike] = None,
        capture: Optional[PathLike] = None,
        capture_inputs: bool = False,
    ) -> None:
        self._native = _tiletune.Runtime(
            os.fspath(database),
            [os.fspath(f) for f in families],
            os.fspath(cache) if cache is not None else "",
            os.fspath(bundle) if bundle is not None else "",
            os.fspath(capture) if capture is not None else "",
            bool(capture_inputs),
        )

    def kernel(self, family: str, size: str, args: str = "") -> Kernel:
        """The family's best configuration for the current device and the problem, compiled as its sweep
        compiled it (or from the compile cache or the bundle), loaded once. Raises tiletune.Error when the
        family, the problem, the database or the GPU is wrong, or the template changed since it was tuned."""
        return Kernel(self._native.kernel(family, size, args), self)

"""Type stubs of fusert's native module (python/src/module.cc); use the package fusert."""
from typing import Dict, List, Optional, Tuple, Union

import numpy as np

__version__: str

class Error(RuntimeError):
    """An error from fusert: the message names the file, node or tensor."""
    code: str  # "invalid argument", "parse error", "not found", "shape mismatch", "unsupported", ...

class DimRange:
    """A symbolic dim's range: min <= opt <= max; the plan is made at opt (default: min)."""
    min: int
    max: int
    opt: int
    def __init__(self, min: int = ..., max: int = ..., opt: int = -1) -> None: ...

class SessionOptions:
    device: str  # "cpu" (default) or "cuda"
    threads: int  # CPU worker threads per run; 0: all cores
    pin_threads: bool  # pin a run's OpenMP threads to cores when it takes them all (default True)
    fusion: str  # "all" (default), "none", or a comma list of horizontal, vertical, cross, compound
    weights: str  # a YAML model's safetensors file; empty: the file the model names
    seeded: bool
    seed: int
    input_shapes: Dict[str, List[int]]  # fixed input shapes, {name: dims}
    dim_ranges: Dict[str, DimRange]  # symbolic dims' ranges, {dim name: DimRange}
    shape_cache_size: int  # execution plans kept, one per input shape (default 16)
    profile_guided: bool
    cpu_kernels: str  # "onednn" (default) or "reference"
    precision: str  # "f32" (default) or "bf16" (CPU anchors in bf16, f32 accumulation; needs AVX512_BF16/AMX)
    f64_as_f32: bool
    cuda_graph: bool
    tf32: bool
    def __init__(self) -> None: ...

Dims = List[Union[int, str, None]]

class Session:
    def __init__(self, path: str, options: SessionOptions) -> None: ...
    def inputs(self) -> List[Tuple[str, str, Dims]]: ...
    def outputs(self) -> List[Tuple[str, str, Dims]]: ...
    def run(self, feed: Dict[str, np.ndarray]) -> Dict[str, np.ndarray]: ...
    def profile(self, feed: Dict[str, np.ndarray], runs: int) -> List[dict]: ...
    def time_runs(self, feed: Dict[str, np.ndarray], runs: int) -> List[float]: ...
    def read_image(self, path: str) -> np.ndarray: ...
    def labels(self) -> List[str]: ...
    def explain(self) -> str: ...
    def stats(self) -> dict: ...
    def close(self) -> None: ...
    @property
    def closed(self) -> bool: ...

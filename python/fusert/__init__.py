"""fusert: an inference runtime built around a fusion planner, from Python.

The surface is ONNX Runtime's, so that code written for ``onnxruntime.InferenceSession`` runs
unchanged::

    import numpy as np, fusert
    sess = fusert.InferenceSession("model.onnx")          # or a fusert YAML model
    x = sess.get_inputs()[0]                              # name, shape (symbolic dims by name), type
    (y,) = sess.run(None, {x.name: np.zeros([1, 3, 224, 224], np.float32)})

plus fusert's own: ``explain()`` (the fusion plan), ``profile()`` (time per fused step),
``stats()`` (kernels, bytes, shape-cache counters) and ``SessionOptions`` (threads, device,
fusion mode, input shapes, shape cache).

Arrays: inputs are numpy arrays of the model input's dtype (float32 for images and features,
int64 for token ids, uint8 / int8 for a quantised model's int8 inputs); a C-contiguous array aligned to 64 bytes is read in place, any other is
copied once. Outputs are numpy arrays that own their memory (no copy out of the runtime).
``run`` releases the GIL: several Python threads may share one session and run it at once.
Errors raise ``fusert.Error`` (a RuntimeError) whose message names the file, node or tensor and
whose ``code`` says what kind it is ("invalid argument", "shape mismatch", "not found", ...).
"""
from __future__ import annotations

from typing import Dict, Iterable, List, Optional, Sequence, Union

import numpy as np

from ._fusert import DimRange, Error, SessionOptions, __version__
from ._fusert import Session as _Session

__all__ = ["InferenceSession", "SessionOptions", "DimRange", "NodeArg", "Error", "__version__", "get_device"]

_ORT_TYPES = {"float32": "tensor(float)", "float16": "tensor(float16)", "bfloat16": "tensor(bfloat16)",
              "int64": "tensor(int64)", "int32": "tensor(int32)", "bool": "tensor(bool)", "int8": "tensor(int8)",
              "uint8": "tensor(uint8)"}


def get_device() -> str:
    """'CPU' (as onnxruntime.get_device()); a session on the GPU asks for it with options.device = 'cuda'."""
    return "CPU"


class NodeArg:
    """A model input or output: ``name``; ``shape``, a list whose entries are ints (fixed dims),
    strings (symbolic dims by name, e.g. 'batch') or None (a dim that follows others, e.g.
    batch * seq); ``type``, as onnxruntime writes it ('tensor(float)'); ``dtype``, its numpy dtype."""

    __slots__ = ("name", "shape", "type", "dtype")

    def __init__(self, name: str, dtype: str, shape: List[Union[int, str, None]]):
        self.name = name
        self.shape = shape
        self.type = _ORT_TYPES.get(dtype, "tensor(" + dtype + ")")
        self.dtype = np.dtype(dtype) if dtype != "bfloat16" else dtype

    def __repr__(self) -> str:
        return f"NodeArg(name={self.name!r}, type={self.type!r}, shape={self.shape!r})"


def _session_from_bytes(model: bytes, opts):
    """A session of an ONNX model given as bytes: written to a private temporary file, loaded
    (the session keeps nothing from the file), then removed."""
    import os
    import tempfile
    fd, tmp = tempfile.mkstemp(prefix="fusert-model-", suffix=".onnx")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(model)
        try:
            return _Session(tmp, opts)
        except Error as e:  # name the bytes, not the temporary file
            err = Error(str(e).replace(tmp, "<model bytes>"))
            err.code = getattr(e, "code", "")
            raise err from None
    finally:
        os.remove(tmp)


class InferenceSession:
    """A model loaded, planned and fused once, run many times.

    path: an ONNX file (.onnx) or a fusert YAML model (.yaml; its weights from the file it names
    or ``options.weights``), or an ONNX model's bytes (``bytes``, as onnxruntime takes them; the
    model then cannot name external-data files). options: a ``SessionOptions`` (default: all cores, CPU, fusion
    'all', every symbolic dim open). ``providers`` and ``sess_options`` are accepted for
    onnxruntime compatibility: ``providers`` containing 'CUDAExecutionProvider' (and not
    'CPUExecutionProvider' first) selects device 'cuda'.
    Raises fusert.Error for a file that does not load (its message names the file and node)."""

    def __init__(self, path, options: Optional[SessionOptions] = None, providers: Optional[Sequence] = None,
                 sess_options: Optional[SessionOptions] = None):
        opts = options if options is not None else sess_options
        if opts is None:
            opts = SessionOptions()
        elif not isinstance(opts, SessionOptions):
            raise TypeError("options must be a fusert.SessionOptions, not " + type(opts).__name__)
        if providers:
            names = [p[0] if isinstance(p, (tuple, list)) else p for p in providers]
            if names[0] == "CUDAExecutionProvider":
                opts.device = "cuda"
        if isinstance(path, (bytes, bytearray, memoryview)):
            self._path = "<bytes>"
            self._s = _session_from_bytes(bytes(path), opts)
        else:
            self._path = str(path)
            self._s = _Session(self._path, opts)
        self._inputs = [NodeArg(*t) for t in self._s.inputs()]
        self._outputs = [NodeArg(*t) for t in self._s.outputs()]

    # -- onnxruntime's surface -------------------------------------------------------------
    def get_inputs(self) -> List[NodeArg]:
        """The model's inputs, in order."""
        return list(self._inputs)

    def get_outputs(self) -> List[NodeArg]:
        """The model's outputs, in order (a data-dependent size is a symbolic dim 'NODE.n')."""
        return list(self._outputs)

    def get_providers(self) -> List[str]:
        return ["CUDAExecutionProvider"] if self._device() == "cuda" else ["CPUExecutionProvider"]

    def run(self, output_names: Optional[Iterable[str]], input_feed: Dict[str, np.ndarray],
            run_options=None) -> List[np.ndarray]:
        """Runs the model on ``input_feed`` ({input name: numpy array}, every input given) and
        returns the outputs named in ``output_names`` (None: all, in get_outputs() order) as numpy
        arrays, in that order. Raises fusert.Error (code 'invalid argument') for an unknown or
        missing input, a wrong dtype or an unknown output name, and ('shape mismatch') for a
        shape the model does not take; the message names the tensor."""
        result = self._s.run(self._feed(input_feed))
        names = [o.name for o in self._outputs] if output_names is None else list(output_names)
        for n in names:
            if n not in result:
                raise self._error(f"the model has no output '{n}' (its outputs: "
                                  + ", ".join(repr(o.name) for o in self._outputs) + ")")
        return [result[n] for n in names]

    def run_dict(self, input_feed: Dict[str, np.ndarray]) -> Dict[str, np.ndarray]:
        """As run(None, input_feed), as {output name: array}."""
        return self._s.run(self._feed(input_feed))

    # -- fusert's own ------------------------------------------------------------------------
    def read_image(self, path) -> np.ndarray:
        """A PNG or JPEG file preprocessed as the model declares (a YAML model's `preprocess`:
        resize, centre crop, mean/std): float32 NCHW [1, 3, crop, crop]. Raises fusert.Error
        ('unsupported') for a model that declares no preprocessing, ('not found', 'parse error')
        for a missing or corrupt file."""
        return self._s.read_image(str(path))

    def labels(self) -> List[str]:
        """The model's class names (index = class id) from the labels file it declares; [] when
        it declares none."""
        return self._s.labels()

    def explain(self) -> str:
        """The fusion plan as ``infer --explain`` prints it: every fusion group with its nodes,
        and the candidates the planner refused with the reason."""
        return self._s.explain()

    def profile(self, input_feed: Dict[str, np.ndarray], runs: int = 10) -> List[dict]:
        """Times every step of the plan over ``runs`` runs of ``input_feed``: a list of
        {name, kernel, detail, nodes, ms (median wall time, milliseconds), flops,
        reference_loop}, in execution order."""
        if runs < 1:
            raise self._error(f"runs must be at least 1, got {runs}")
        return self._s.profile(self._feed(input_feed), runs)

    def stats(self) -> dict:
        """Load, plan and run figures: nodes, kernels (launches per run), intermediate and
        activation bytes, load_ms / plan_ms, shape_cache_hits / misses (an execution plan per
        input shape), execution_stages, execution_contexts (runs in flight at most)."""
        return self._s.stats()

    def close(self) -> None:
        """Frees the model now (runs in flight finish first); any later call raises fusert.Error."""
        self._s.close()

    def __enter__(self) -> "InferenceSession":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._s.closed else f"{len(self._inputs)} inputs, {len(self._outputs)} outputs"
        return f"fusert.InferenceSession({self._path!r}, {state})"

    # -- helpers -----------------------------------------------------------------------------
    def _device(self) -> str:
        return "cuda" if self._s.stats().get("device_name") else "cpu"

    def _error(self, message: str) -> Error:
        e = Error(message)
        e.code = "invalid argument"
        return e

    def _feed(self, input_feed) -> Dict[str, np.ndarray]:
        if not isinstance(input_feed, dict):
            raise TypeError("input_feed must be a dict {input name: numpy array}, not " + type(input_feed).__name__)
        feed = {}
        for name, value in input_feed.items():
            if not isinstance(name, str):
                raise TypeError(f"input_feed keys are input names (str), got {name!r}")
            if not isinstance(value, np.ndarray):
                raise self._error(f"input '{name}' must be a numpy array, not {type(value).__name__}")
            feed[name] = value if value.flags.c_contiguous else np.ascontiguousarray(value)
        return feed

#!/usr/bin/env python3
"""An OpenVINO worker process for tools/cpu_bench.py: the other CPU runtime a user would pick.

    python3 tools/ov_worker.py MODEL.onnx --threads T --input NAME=FILE.npy [...]

Speaks the protocol of `bench --serve` (apps/bench/serve.h; tools/worker_protocol.py), as
tools/ort_worker.py does.

OpenVINO reads the ONNX file itself (its ONNX frontend).
- Inputs with symbolic dims are reshaped to the given .npy's shape before compiling.
- The CPU plugin is compiled with PERFORMANCE_HINT=LATENCY and INFERENCE_NUM_THREADS=T (0 leaves
  OpenVINO's default, all cores).
- INFERENCE_PRECISION_HINT is f32 (--precision bf16: bf16, the `openvino_bf16` engine of
  `cpu_bench.py --bf16`). On CPUs with AMX or AVX512-BF16, OpenVINO's default is bf16, which would
  compare another precision.

Everything else is OpenVINO's defaults. Imports only numpy and openvino.
"""
import sys

import numpy as np

from worker_protocol import fail, load_feeds, parse_args, serve


def load(model_path, threads, inputs, precision="f32"):
    import openvino as ov
    core = ov.Core()
    model = core.read_model(model_path)
    feeds = load_feeds(inputs)
    names = {p.get_any_name() for p in model.inputs}
    if set(feeds) != names:
        raise ValueError(f"inputs given {sorted(feeds)}, the model has {sorted(names)}")
    if any(p.get_partial_shape().is_dynamic for p in model.inputs):
        model.reshape({name: list(x.shape) for name, x in feeds.items()})
    config = {"PERFORMANCE_HINT": "LATENCY", "INFERENCE_PRECISION_HINT": precision}
    if threads > 0:
        config["INFERENCE_NUM_THREADS"] = threads
    compiled = core.compile_model(model, "CPU", config)
    return ov, compiled.create_infer_request(), feeds


def main():
    a = parse_args(__doc__)
    try:
        ov, req, feeds = load(a.model, a.threads, a.input, a.precision)
    except Exception as e:  # noqa: BLE001 - reported to the coordinator, which names the model
        return fail(e)
    ran = []

    def run():
        req.infer(feeds)
        ran[:] = [True]

    def first_output():
        if not ran:
            run()
        return np.array(req.get_output_tensor(0).data, copy=True)

    return serve({"openvino": ov.get_version()}, run, first_output)


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""An ONNX Runtime worker process for tools/cpu_bench.py: the peer a user would pick instead.

    python3 tools/ort_worker.py MODEL.onnx --threads T --input NAME=FILE.npy [...]

Speaks the protocol of `bench --serve` (apps/bench/serve.h; tools/worker_protocol.py), so that the
coordinator can interleave engines run by run.
Session options: all graph optimisations (ORT_ENABLE_ALL), sequential execution, intra-op threads =
--threads, inter-op threads 1; everything else ONNX Runtime's defaults (a user's first choice).
Imports only numpy and onnxruntime, so that the peak RSS is ONNX Runtime's and not PyTorch's.
"""
import sys

from worker_protocol import fail, load_feeds, parse_args, serve


def main():
    a = parse_args(__doc__)
    try:
        import onnxruntime as ort
        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        so.intra_op_num_threads = a.threads
        so.inter_op_num_threads = 1
        sess = ort.InferenceSession(a.model, so, providers=["CPUExecutionProvider"])
        feeds = load_feeds(a.input)
        want = {i.name for i in sess.get_inputs()}
        if set(feeds) != want:
            raise ValueError(f"inputs given {sorted(feeds)}, the model has {sorted(want)}")
    except Exception as e:  # noqa: BLE001 - reported to the coordinator, which names the model
        return fail(e)
    last = []

    def run():
        last[:] = sess.run(None, feeds)

    def first_output():
        if not last:
            run()
        return last[0]

    return serve({"onnxruntime": ort.__version__}, run, first_output)


if __name__ == "__main__":
    sys.exit(main())

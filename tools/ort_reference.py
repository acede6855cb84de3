#!/usr/bin/env python3
"""ONNX Runtime as a reference command of fusert-zoo (models/ZOO.md):

    ort_reference.py MODEL.onnx INPUTS_DIR OUTPUT.npy

runs MODEL.onnx on CPUExecutionProvider (1 thread) with each graph input read from
INPUTS_DIR/<name>.npy and writes its first output to OUTPUT.npy. Needs onnxruntime and numpy
(tools/setup_onnx_venv.sh). Exit 1 with the reason on a missing input or a failed run.
"""
import os
import sys


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    import numpy as np
    import onnxruntime as ort
    model, inputs, output = sys.argv[1:]
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    feed = {}
    for i in sess.get_inputs():
        path = os.path.join(inputs, i.name + ".npy")
        if not os.path.exists(path):
            sys.exit(f"ort_reference: no {path} for input '{i.name}'")
        feed[i.name] = np.load(path)
    np.save(output, sess.run(None, feed)[0])
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""ONNX test cases whose expected outputs come from ONNX Runtime, for ops whose attributes ONNX's own
backend test data leaves out (bidirectional and reverse recurrences, sequence lengths, clip, ...).

  ort_cases.py fetch                             the pinned wheels the real models come from
  ort_cases.py write [--out .cache/ort-cases]   models and inputs built with onnx.helper, outputs
                                                 computed by ONNX Runtime, in the layout of ONNX's
                                                 test data: OUT/<suite>/<case>/model.onnx and
                                                 test_data_set_0/{input,output}_N.pb
  ort_cases.py check --conformance BIN [--out DIR]   writes them, runs BIN (tests/onnx/conformance.cc)
                                                 on them with fusion none and all, and fails unless
                                                 every case passed (a skip is a failure here)

Suites: `recurrent` (RNN, GRU, LSTM attribute by attribute, ONNX's tolerances), `image` (RoiAlign:
avg and max, sampling ratios, scales, regions partly outside, opset 10's output_half_pixel; MaxPool's
indices) and `real` (real
models from pinned PyPI wheels, each with two test_data_sets of different input sizes run in one
session, every fusion mode, relative L2 <= 1e-4 besides the element-wise tolerance): Silero VAD
6.2.3's voice-activity detectors (STFT as a 1-D conv, LSTM, If on the sample rate; silero_vad.onnx's
If around two whole detectors with its chunk pinned, both branches taken) and a
Transformer encoder PyTorch exports with a symbolic batch and sequence (tools/transformer_onnx.py).

`dd` (tools/ort_cases_dd.py): ops whose output size depends on the data (NonMaxSuppression, NonZero,
TopK with a computed K, Unique, Compress; a count read through Shape) between ops fusert plans and fuses, several sizes and counts
(one of them 0) per session, every fusion mode; and in `real`, NudeNet 3.4.2's YOLOv8n detector with
NonMaxSuppression appended in the graph, on the bundled photos at two sizes and a blank image.

`volume` (tools/ort_cases_volume.py): 3-D Conv, ConvTranspose, MaxPool and AveragePool in small NCDHW
networks (groups, dilations, asymmetric and automatic pads, ceil_mode, count_include_pad,
output_padding), two input sizes per session, every fusion mode.

`quant` (tools/ort_cases_quant.py): QLinearConv with constant scales, a network quantised by ONNX Runtime's
quantize_static (QDQ) and an MLP by quantize_dynamic, the element ops; two sizes per session, every fusion mode.

`loop` (tools/ort_cases_loop.py): Loops decided at run time (a trip count that is an input, a body that
computes its condition, more iterations than the import unrolls, an If inside the body, a body reading
graph inputs) between ops fusert plans and fuses, several sizes and iteration counts (one of them 0).

Run with the venv of tools/setup_onnx_venv.sh (onnx, onnxruntime, numpy, pillow).
"""
import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import zipfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

import ort_cases_dd
import ort_cases_loop
import ort_cases_quant
import ort_cases_volume

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def recurrent_case(op, seed, seq=5, batch=3, inp=4, hidden=6, direction="forward", layout=0, lens=None,
                   bias=True, initial=True, peephole=False, opset=14, **attrs):
    """One RNN / GRU / LSTM node with every input it takes; returns (model, inputs)."""
    rng = np.random.default_rng(seed)
    gates = {"RNN": 1, "GRU": 3, "LSTM": 4}[op]
    d = 2 if direction == "bidirectional" else 1
    x_shape = [seq, batch, inp]  # layout 1 transposes these below
    state = [d, batch, hidden]
    feeds = {
        "X": rng.standard_normal(x_shape).astype(np.float32),
        "W": (0.5 * rng.standard_normal([d, gates * hidden, inp])).astype(np.float32),
        "R": (0.5 * rng.standard_normal([d, gates * hidden, hidden])).astype(np.float32),
    }
    names = ["X", "W", "R"]
    if bias:
        feeds["B"] = (0.3 * rng.standard_normal([d, 2 * gates * hidden])).astype(np.float32)
    names.append("B" if bias else "")
    if lens is not None:
        feeds["sequence_lens"] = np.array(lens, dtype=np.int32)
    names.append("sequence_lens" if lens is not None else "")
    if initial:
        feeds["initial_h"] = rng.standard_normal(state).astype(np.float32)
    names.append("initial_h" if initial else "")
    if op == "LSTM":
        if initial:
            feeds["initial_c"] = rng.standard_normal(state).astype(np.float32)
        names.append("initial_c" if initial else "")
        if peephole:
            feeds["P"] = (0.3 * rng.standard_normal([d, 3 * hidden])).astype(np.float32)
        names.append("P" if peephole else "")
    while names and names[-1] == "":
        names.pop()
    outs = ["Y", "Y_h"] + (["Y_c"] if op == "LSTM" else [])
    node = helper.make_node(op, names, outs, hidden_size=hidden, direction=direction, **attrs)
    model = make_model(op, node, names, outs, feeds, opset)
    if not layout:
        return model, {n: feeds[n] for n in names if n}, None
    # Batch first: ONNX Runtime runs layout 0 only, so the layout-0 model's outputs, transposed,
    # are the reference ([S, D, B, H] -> [B, S, D, H]; [D, B, H] -> [B, D, H]).
    reference = (model, {n: feeds[n] for n in names if n},
                 lambda ys: [np.transpose(ys[0], (2, 0, 1, 3))] + [np.transpose(y, (1, 0, 2)) for y in ys[1:]])
    batch_first = {"X": (1, 0, 2), "initial_h": (1, 0, 2), "initial_c": (1, 0, 2)}
    feeds = {n: np.ascontiguousarray(np.transpose(v, batch_first[n])) if n in batch_first else v
             for n, v in feeds.items()}
    node = helper.make_node(op, names, outs, hidden_size=hidden, direction=direction, layout=1, **attrs)
    return make_model(op, node, names, outs, feeds, opset), {n: feeds[n] for n in names if n}, reference


def make_model(op, node, names, outs, feeds, opset):
    dtype = {np.float32: TensorProto.FLOAT, np.int32: TensorProto.INT32}
    inputs = [helper.make_tensor_value_info(n, dtype[feeds[n].dtype.type], feeds[n].shape) for n in names if n]
    outputs = [helper.make_tensor_value_info(o, TensorProto.FLOAT, []) for o in outs]
    for o in outputs:
        o.type.tensor_type.ClearField("shape")
    graph = helper.make_graph([node], f"{op.lower()}_case", inputs, outputs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def recurrent_cases():
    """(name, model, inputs, reference): the attributes and inputs of RNN, GRU and LSTM one at a time."""
    cases = []
    for op in ("RNN", "GRU", "LSTM"):
        lo = op.lower()
        cases += [
            (f"{lo}_forward", *recurrent_case(op, 1)),
            (f"{lo}_reverse", *recurrent_case(op, 2, direction="reverse")),
            (f"{lo}_bidirectional", *recurrent_case(op, 3, direction="bidirectional")),
            (f"{lo}_bidirectional_lens", *recurrent_case(op, 4, direction="bidirectional", lens=[5, 2, 0])),
            (f"{lo}_reverse_lens", *recurrent_case(op, 5, direction="reverse", lens=[3, 5, 1])),
            (f"{lo}_batch_first", *recurrent_case(op, 6, layout=1, direction="bidirectional", lens=[4, 1, 5])),
            (f"{lo}_clip", *recurrent_case(op, 7, clip=0.7)),
            (f"{lo}_no_bias_no_state", *recurrent_case(op, 8, bias=False, initial=False)),
            (f"{lo}_batch1_seq1", *recurrent_case(op, 9, seq=1, batch=1)),
        ]
    cases.append(("rnn_relu", *recurrent_case("RNN", 10, activations=["Relu"])))
    cases.append(("rnn_leaky_bidirectional", *recurrent_case("RNN", 11, direction="bidirectional",
                                                           activations=["LeakyRelu", "Tanh"],
                                                           activation_alpha=[0.3, 0.0])))
    cases.append(("gru_linear_before_reset", *recurrent_case("GRU", 12, linear_before_reset=1)))
    cases.append(("gru_linear_before_reset_bidirectional_lens",
                  *recurrent_case("GRU", 13, linear_before_reset=1, direction="bidirectional", lens=[1, 5, 3])))
    cases.append(("gru_hardsigmoid", *recurrent_case("GRU", 14, activations=["HardSigmoid", "Softsign"],
                                                    activation_alpha=[0.25], activation_beta=[0.4])))
    cases.append(("lstm_peepholes_bidirectional",
                  *recurrent_case("LSTM", 15, peephole=True, direction="bidirectional", lens=[5, 3, 4])))
    cases.append(("lstm_input_forget", *recurrent_case("LSTM", 16, input_forget=1, peephole=True)))
    cases.append(("lstm_activations", *recurrent_case("LSTM", 17, activations=["HardSigmoid", "Tanh", "Softsign"])))
    # activation_alpha / beta are consumed in order only by the activations that take a value
    cases.append(("lstm_alpha_mixed", *recurrent_case("LSTM", 18, activations=["Sigmoid", "Tanh", "LeakyRelu"],
                                                       activation_alpha=[0.3])))
    cases.append(("gru_alpha_mixed_bidirectional",
                  *recurrent_case("GRU", 19, direction="bidirectional",
                                  activations=["Sigmoid", "LeakyRelu", "HardSigmoid", "ThresholdedRelu"],
                                  activation_alpha=[0.2, 0.3, 0.4], activation_beta=[0.45])))
    return cases

# Real models: (wheel, sha256 of the wheel, member, inputs per test_data_set). An input is a
# shape (noise: audio in [-0.5, 0.5], states 0.1 * normal) or an int64 scalar (the sample rate).
SILERO = ("silero-vad==6.2.3", "7b7f5436cfcb02fae583a05b512ea96467fd449fe54cb49a5e4f06c51a1e43b8")
REAL = {
    "silero_vad_16k_op15": ("silero_vad/data/silero_vad_16k_op15.onnx",
                            [{"input": [1, 576], "state": [2, 1, 128], "sr": 16000},
                             {"input": [3, 576], "state": [2, 3, 128], "sr": 16000}]),
    "silero_vad_op18_ifless": ("silero_vad/data/silero_vad_op18_ifless.onnx",
                               [{"input": [1, 576], "sr": 16000, "state": [2, 1, 128]},
                                {"input": [2, 576], "sr": 16000, "state": [2, 2, 128]}]),
    "silero_vad_half": ("silero_vad/data/silero_vad_half.onnx",
                        [{"input": [1, 576], "state": [2, 1, 128]}, {"input": [4, 576], "state": [2, 4, 128]}]),
    "silero_vad_16k_sequence": ("silero_vad/data/silero_vad_16k_sequence.onnx",
                                [{"input": [1, 576], "h": [1, 1, 128], "c": [1, 1, 128]},
                                 {"input": [5, 576], "h": [1, 1, 128], "c": [1, 1, 128]}]),
    "silero_vad_openvino_16k": ("silero_vad/data/silero_vad_openvino_16k.onnx",
                                [{"input": [1, 576], "state": [2, 1, 128]}]),
}


# A Transformer encoder exported by Debian's PyTorch (tools/transformer_onnx.py, run by make
# onnx-models): ids and mask [batch, seq] int64, two sizes (the second with padding) in one session.
TRANSFORMER = os.path.join(ROOT, ".cache", "transformer-onnx", "encoder.onnx")


def transformer_case(rng):
    if not os.path.exists(TRANSFORMER):
        sys.exit(f"[ort-cases] error: {TRANSFORMER} is missing: run make onnx-models (tools/transformer_onnx.py "
                 "export)")
    feeds = []
    for b, s in ((2, 7), (3, 19)):
        ids = rng.integers(0, 1000, (b, s)).astype(np.int64)
        mask = np.ones((b, s), dtype=np.int64)
        mask[0, s - 3:] = 0  # a padded sequence
        feeds.append({"ids": ids, "mask": mask})
    return ("transformer_encoder_dynamic", onnx.load(TRANSFORMER), feeds)


def fetch_wheel(spec, digest, cache):
    """The pinned wheel in `cache` (pip download, checked against its sha256)."""
    pkg, ver = spec.split("==")
    os.makedirs(cache, exist_ok=True)
    name = [f for f in os.listdir(cache) if f.startswith(pkg.replace("-", "_") + "-" + ver)]
    if not name:
        print(f"[ort-cases] pip download {spec} (no dependencies)")
        subprocess.check_call([sys.executable, "-m", "pip", "download", "-q", "--no-deps",
                               "--disable-pip-version-check", "-d", cache, spec])
        name = [f for f in os.listdir(cache) if f.startswith(pkg.replace("-", "_") + "-" + ver)]
    path = os.path.join(cache, name[0])
    if hashlib.sha256(open(path, "rb").read()).hexdigest() != digest:
        sys.exit(f"[ort-cases] error: {path} has another sha256 than the pinned {digest}")
    return path


def silero_if_cases(wheel, rng):
    """silero_vad.onnx: an If on the sample rate around two whole detectors (16 and 8 kHz), decided at
    run time. Its open dims cannot be planned as they are (the state's batch is a dim of its own, and a
    nested If folds its condition from the chunk length), so the chunk is pinned in the file, as --shape
    pins it: 512 samples at 16 kHz; 256 samples at 16 and 8 kHz in one session (each branch taken once).
    ONNX Runtime computes from the file as shipped (pinned, its shape inference fails in the branch not
    taken)."""
    with zipfile.ZipFile(wheel) as z:
        shipped = onnx.load_from_string(z.read("silero_vad/data/silero_vad.onnx"))
    cases = []
    for n, rates in ((512, (16000, 16000)), (256, (16000, 8000))):
        pinned = onnx.ModelProto()
        pinned.CopyFrom(shipped)
        for i in pinned.graph.input:
            dims = i.type.tensor_type.shape.dim
            if i.name == "input":
                dims[0].dim_value, dims[1].dim_value = 1, n
            elif i.name == "state":
                dims[1].dim_value = 1
        feeds = [{"input": rng.uniform(-0.5, 0.5, [1, n]).astype(np.float32),
                  "state": (0.1 * rng.standard_normal([2, 1, 128])).astype(np.float32),
                  "sr": np.array(sr, dtype=np.int64)} for sr in rates]
        cases.append((f"silero_vad_if_{n}", pinned, feeds, shipped))
    return cases


def real_cases(cache):
    """(name, model, [feeds per test_data_set], reference model or None) of the real models."""
    wheel = fetch_wheel(*SILERO, cache)
    rng = np.random.default_rng(2026)
    cases = []
    with zipfile.ZipFile(wheel) as z:
        for name, (member, sets) in REAL.items():
            model = onnx.load_from_string(z.read(member))
            feeds = []
            for spec in sets:
                f = {}
                for k, v in spec.items():
                    if isinstance(v, int):
                        f[k] = np.array(v, dtype=np.int64)
                    elif k == "input":
                        f[k] = rng.uniform(-0.5, 0.5, v).astype(np.float32)
                    else:
                        f[k] = (0.1 * rng.standard_normal(v)).astype(np.float32)
                feeds.append(f)
            cases.append((name, model, feeds, None))
    cases.extend(silero_if_cases(wheel, rng))
    cases.append((*transformer_case(rng), None))
    photos = [os.path.join(ROOT, "models", "data", p) for p in ("chelsea.png", "coffee.png")]
    cases.append((*ort_cases_dd.nudenet_case(fetch_wheel(*ort_cases_dd.NUDENET, cache), photos), None))
    return cases


def save_sets(root, suite, name, model, feed_sets, reference=None):
    """model.onnx and test_data_set_K (inputs in graph order, ONNX Runtime's outputs of `reference`, by
    default the model itself) per feeds."""
    d = os.path.join(root, suite, name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "model.onnx"), "wb") as f:
        f.write(model.SerializeToString())
    sess = ort.InferenceSession((reference or model).SerializeToString(), providers=["CPUExecutionProvider"])
    inits = {i.name for i in model.graph.initializer}
    names = [i.name for i in model.graph.input if i.name not in inits]
    for k, feeds in enumerate(feed_sets):
        data = os.path.join(d, f"test_data_set_{k}")
        os.makedirs(data, exist_ok=True)
        results = sess.run(None, feeds)
        for i, n in enumerate(names):
            with open(os.path.join(data, f"input_{i}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(feeds[n], n).SerializeToString())
        for i, (o, v) in enumerate(zip(sess.get_outputs(), results)):
            with open(os.path.join(data, f"output_{i}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(np.asarray(v, dtype=np.float32) if v.dtype == np.float64 else v,
                                                o.name).SerializeToString())


def roi_align_cases():
    """(name, model, inputs, None): RoiAlign's modes, sampling, scales and regions partly outside; MaxPool
    with its indices (pads, storage_order 1, dilations and ceil_mode, 1-D)."""
    cases = []
    rng = np.random.default_rng(40)
    x = rng.standard_normal([2, 3, 10, 12]).astype(np.float32)
    rois = np.array([[0, 0, 9, 9], [1.5, 2.25, 7.75, 8.5], [-3, -2, 4, 5], [8, 6, 20, 14], [2, 2, 2.4, 2.2]],
                    dtype=np.float32)
    batch = np.array([0, 1, 1, 0, 1], dtype=np.int64)
    variants = [("avg", {}), ("max", {"mode": "max"}), ("sampling2", {"sampling_ratio": 2}),
                ("scale_half", {"spatial_scale": 0.5, "output_height": 3, "output_width": 4}),
                ("max_sampling3", {"mode": "max", "sampling_ratio": 3, "output_height": 2, "output_width": 5}),
                ("output_half_pixel", {"coordinate_transformation_mode": "output_half_pixel"}),
                ("opset10", {"opset": 10, "output_height": 4, "output_width": 3})]
    for name, attrs in variants:
        attrs = dict(attrs)
        opset = attrs.pop("opset", 16)
        attrs.setdefault("output_height", 5)
        attrs.setdefault("output_width", 5)
        node = helper.make_node("RoiAlign", ["X", "rois", "batch_indices"], ["Y"], **attrs)
        inputs = [helper.make_tensor_value_info("X", TensorProto.FLOAT, x.shape),
                  helper.make_tensor_value_info("rois", TensorProto.FLOAT, rois.shape),
                  helper.make_tensor_value_info("batch_indices", TensorProto.INT64, batch.shape)]
        out = helper.make_tensor_value_info("Y", TensorProto.FLOAT, [])
        out.type.tensor_type.ClearField("shape")
        graph = helper.make_graph([node], "roi_align_case", inputs, [out])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
        model.ir_version = 8
        cases.append((f"roialign_{name}", model, {"X": x, "rois": rois, "batch_indices": batch}, None))
    rng = np.random.default_rng(41)
    for name, shape, attrs in [
            ("maxpool_indices_pads", [2, 3, 7, 6], dict(kernel_shape=[3, 2], strides=[2, 1], pads=[1, 0, 1, 1])),
            ("maxpool_indices_column_major", [1, 2, 5, 5], dict(kernel_shape=[2, 2], storage_order=1)),
            ("maxpool_indices_dilated_ceil", [1, 2, 9, 8], dict(kernel_shape=[2, 3], dilations=[2, 1], ceil_mode=1,
                                                              strides=[2, 2])),
            ("maxpool_indices_1d", [2, 3, 11], dict(kernel_shape=[3], strides=[2], pads=[1, 1]))]:
        x = rng.standard_normal(shape).astype(np.float32)
        node = helper.make_node("MaxPool", ["X"], ["Y", "I"], **attrs)
        outs = [helper.make_tensor_value_info("Y", TensorProto.FLOAT, []),
                helper.make_tensor_value_info("I", TensorProto.INT64, [])]
        for o in outs:
            o.type.tensor_type.ClearField("shape")
        graph = helper.make_graph([node], name, [helper.make_tensor_value_info("X", TensorProto.FLOAT, shape)], outs)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 12)])
        model.ir_version = 8
        cases.append((name, model, {"X": x}, None))
    return cases


def save_case(root, suite, name, model, feeds, reference=None):
    d = os.path.join(root, suite, name)
    data = os.path.join(d, "test_data_set_0")
    os.makedirs(data, exist_ok=True)
    with open(os.path.join(d, "model.onnx"), "wb") as f:
        f.write(model.SerializeToString())
    ref_model, ref_feeds, convert = reference or (model, feeds, lambda ys: ys)
    sess = ort.InferenceSession(ref_model.SerializeToString(), providers=["CPUExecutionProvider"])
    results = convert(sess.run(None, ref_feeds))
    for i, n in enumerate(i.name for i in model.graph.input):
        with open(os.path.join(data, f"input_{i}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(feeds[n], n).SerializeToString())
    for i, (o, v) in enumerate(zip(model.graph.output, results)):
        with open(os.path.join(data, f"output_{i}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(v, o.name).SerializeToString())


def write(out):
    shutil.rmtree(out, ignore_errors=True)
    cases = recurrent_cases()
    for name, model, feeds, reference in cases:
        save_case(out, "recurrent", name, model, feeds, reference)
    image = roi_align_cases()
    for name, model, feeds, reference in image:
        save_case(out, "image", name, model, feeds, reference)
    real = real_cases(os.path.join(ROOT, ".cache", "wheels"))
    for name, model, feed_sets, reference in real:
        save_sets(out, "real", name, model, feed_sets, reference)
    dd = ort_cases_dd.dd_cases()
    for name, model, feed_sets in dd:
        save_sets(out, "dd", name, model, feed_sets)
    loops = ort_cases_loop.loop_cases()
    for name, model, feed_sets in loops:
        save_sets(out, "loop", name, model, feed_sets)
    volume = ort_cases_volume.volume_cases()
    for name, model, feed_sets in volume:
        save_sets(out, "volume", name, model, feed_sets)
    quant = ort_cases_quant.quant_cases()
    for name, model, feed_sets in quant:
        save_sets(out, "quant", name, model, feed_sets)
    print(f"[ort-cases] wrote {len(cases)} cases to {out}/recurrent, {len(image)} to {out}/image, {len(dd)} to "
          f"{out}/dd, {len(loops)} to {out}/loop, {len(volume)} to {out}/volume, {len(quant)} to {out}/quant and {len(real)} real models to {out}/real (expected outputs from "
          f"ONNX Runtime {ort.__version__})")


def check(out, conformance):
    write(out)
    js, js_real = os.path.join(out, "result.json"), os.path.join(out, "result_real.json")
    rc = subprocess.call([conformance, "--data", out, "--suites", "recurrent,image", "--json", js])
    rc |= subprocess.call([conformance, "--data", out, "--suites", "real,dd,loop,volume,quant", "--json", js_real, "--fusion",
                           "none,all,vertical,horizontal,cross,compound", "--rel-l2", "1e-4"])
    results = json.load(open(js)) + json.load(open(js_real))
    bad = [r for r in results if r["status"] != "passed"]
    for r in bad:
        print(f"NOT PASSED {r['case']} [fusion {r['fusion']}]: {r['status']}: {r['reason']}")
    print(f"[ort-cases] {len(results) - len(bad)} of {len(results)} passed")
    return 1 if bad or rc != 0 or not results else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("command", choices=["fetch", "write", "check"])
    ap.add_argument("--out", default=os.path.join(ROOT, ".cache", "ort-cases"))
    ap.add_argument("--conformance", help="the onnx_conformance binary (check)")
    a = ap.parse_args()
    if a.command == "fetch":  # the pinned wheels of the real models (make onnx-models)
        for wheel in (SILERO, ort_cases_dd.NUDENET):
            print(f"[ort-cases] {fetch_wheel(*wheel, os.path.join(ROOT, '.cache', 'wheels'))} present")
        return 0
    if a.command == "write":
        write(a.out)
        return 0
    if not a.conformance:
        ap.error("check needs --conformance")
    return check(a.out, a.conformance)


if __name__ == "__main__":
    sys.exit(main())

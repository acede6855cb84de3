"""fusert behind Ray Serve: one model per replica, requests over HTTP, concurrent requests batched
into the model's symbolic batch dim.

Start it on a local Ray cluster (or on a running one with --address auto)::

    python -m fusert.serve models/efficientnet_lite0.yaml --replicas 2 --threads 1 \\
        --max-batch-size 8 --batch-wait-ms 5 --port 8000

Requests (POST /):
- JSON: ``{"inputs": {"input": [[...]]}}`` (nested lists, or ``{"data": [...], "shape": [...]}``
  per input), each input with its batch rows first; the reply is
  ``{"outputs": {name: {"shape": [...], "dtype": "float32", "data": [...flat...]}}}``.
- .npy: the body is one ``numpy.save`` array (``Content-Type: application/x-npy``) for a model
  with one input; with ``Accept: application/x-npy`` the reply is the first output as .npy.
GET /metadata gives the inputs and outputs; GET /stats the replica's request count, latency
percentiles (p50/p90/p99, milliseconds, server side) and batch sizes.

A bad request (malformed body, unknown input, wrong dtype or shape) is answered 400 with
``{"error": message}`` naming the input; a failure inside the runtime 500; never a wrong tensor.
"""
from __future__ import annotations

import argparse
import asyncio
import collections
import io
import json
import math
import sys
import time
from typing import Dict, List, Tuple

import numpy as np

import fusert

try:
    from ray import serve
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response
except ImportError as e:  # pragma: no cover - reported to the user
    raise ImportError("fusert.serve needs Ray Serve: pip install 'ray[serve]'") from e


class BadRequest(ValueError):
    """A request the model cannot take: answered 400 with its message."""


def _percentile(sorted_ms: List[float], q: float) -> float:
    if not sorted_ms:
        return 0.0
    k = min(len(sorted_ms) - 1, max(0, math.ceil(q / 100.0 * len(sorted_ms)) - 1))
    return sorted_ms[k]


def _array_from_json(name: str, value, dtype) -> np.ndarray:
    if isinstance(value, dict):
        if "data" not in value or "shape" not in value:
            raise BadRequest(f"input '{name}': an object needs 'data' (flat list) and 'shape'")
        a = np.asarray(value["data"], dtype=dtype)
        try:
            return a.reshape(value["shape"])
        except ValueError:
            raise BadRequest(f"input '{name}': {a.size} values do not fill shape {value['shape']}") from None
    try:
        return np.asarray(value, dtype=dtype)
    except (ValueError, TypeError) as e:
        raise BadRequest(f"input '{name}': not a rectangular array of numbers ({e})") from None


@serve.deployment
class FusertModel:
    """One fusert session per replica. ``batching``: requests that arrive together (up to
    ``max_batch_size`` rows, waiting at most ``batch_wait_timeout_s``) run as one batch along
    the model's symbolic first dim, when every input and output has one (else each request runs
    alone). ``threads``: CPU threads per run (a replica's share of the machine)."""

    def __init__(self, model: str, threads: int = 1, fusion: str = "all", batching: bool = True,
                 max_batch_size: int = 8, batch_wait_timeout_s: float = 0.005):
        opts = fusert.SessionOptions()
        opts.threads = threads
        opts.fusion = fusion
        opts.pin_threads = False  # the replica shares the cores with Ray's proxy and other replicas
        self.sess = fusert.InferenceSession(model, opts)
        self.model = model
        self.inputs = self.sess.get_inputs()
        self.outputs = self.sess.get_outputs()
        first = {a.shape[0] if a.shape else None for a in self.inputs + self.outputs}
        self.batchable = len(first) == 1 and isinstance(next(iter(first)), str)
        self.batching = batching and self.batchable
        self.max_batch_size = max_batch_size
        self._run_batch.set_max_batch_size(max_batch_size)
        self._run_batch.set_batch_wait_timeout_s(batch_wait_timeout_s)
        self.latency_ms = collections.deque(maxlen=20000)
        self.batch_rows = collections.Counter()
        self.requests = 0
        self.errors = 0

    # -- requests ------------------------------------------------------------------------------
    async def __call__(self, request: Request):
        path = request.url.path.rstrip("/")
        if request.method == "GET":
            if path.endswith("/stats"):
                return JSONResponse(self.stats())
            if path.endswith("/metadata") or path == "":
                return JSONResponse(self.metadata())
            return JSONResponse({"error": f"no resource {request.url.path} (GET /metadata, /stats; POST /)"},
                                status_code=404)
        t0 = time.perf_counter()
        self.requests += 1
        try:
            feed = self._parse(await request.body(), request.headers.get("content-type", ""))
            out = await self.infer(feed)
        except BadRequest as e:
            self.errors += 1
            return JSONResponse({"error": str(e)}, status_code=400)
        except fusert.Error as e:
            self.errors += 1
            status = 400 if e.code in ("invalid argument", "shape mismatch") else 500
            return JSONResponse({"error": str(e), "code": e.code}, status_code=status)
        self.latency_ms.append(1e3 * (time.perf_counter() - t0))
        if "application/x-npy" in request.headers.get("accept", ""):
            buf = io.BytesIO()
            np.save(buf, out[self.outputs[0].name])
            return Response(buf.getvalue(), media_type="application/x-npy")
        return JSONResponse({"outputs": {k: {"shape": list(v.shape), "dtype": str(v.dtype), "data": v.ravel().tolist()}
                                         for k, v in out.items()}})

    async def infer(self, feed: Dict[str, np.ndarray]) -> Dict[str, np.ndarray]:
        """Runs one request's feed, batched with others that arrive with it when batching."""
        self._check(feed)
        if not self.batching:
            self.batch_rows[self._rows(feed)] += 1
            return await asyncio.to_thread(self.sess.run_dict, feed)
        ok, value = await self._run_batch(feed)
        if not ok:
            raise value
        return value

    @serve.batch(max_batch_size=8, batch_wait_timeout_s=0.005)
    async def _run_batch(self, feeds: List[Dict[str, np.ndarray]]) -> List[Tuple[bool, object]]:
        # Requests whose non-batch dims agree run together (a Transformer's seq may differ).
        groups = collections.defaultdict(list)
        for k, f in enumerate(feeds):
            groups[tuple((n, a.shape[1:]) for n, a in sorted(f.items()))].append(k)
        results: List[Tuple[bool, object]] = [(False, None)] * len(feeds)
        for members in groups.values():
            rows = [self._rows(feeds[k]) for k in members]
            batch = {n: np.concatenate([feeds[k][n] for k in members]) for n in feeds[members[0]]}
            self.batch_rows[sum(rows)] += 1
            try:
                out = await asyncio.to_thread(self.sess.run_dict, batch)
            except fusert.Error:
                for k in members:  # one bad request must not fail the others: each alone
                    try:
                        results[k] = (True, await asyncio.to_thread(self.sess.run_dict, feeds[k]))
                    except fusert.Error as e:
                        results[k] = (False, e)
                continue
            start = 0
            for k, r in zip(members, rows):
                results[k] = (True, {n: v[start:start + r] for n, v in out.items()})
                start += r
        return results

    # -- helpers -------------------------------------------------------------------------------
    def _rows(self, feed) -> int:
        return int(next(iter(feed.values())).shape[0]) if feed and next(iter(feed.values())).ndim else 1

    def _parse(self, body: bytes, ctype: str) -> Dict[str, np.ndarray]:
        if "application/x-npy" in ctype or "application/octet-stream" in ctype:
            if len(self.inputs) != 1:
                raise BadRequest(f"a .npy body feeds one input; this model has {len(self.inputs)}: send JSON")
            try:
                a = np.load(io.BytesIO(body), allow_pickle=False)
            except (ValueError, OSError, EOFError) as e:
                raise BadRequest(f"the body is not a .npy array ({e})") from None
            return {self.inputs[0].name: a}
        try:
            doc = json.loads(body)
        except (ValueError, UnicodeDecodeError) as e:
            raise BadRequest(f"the body is neither JSON nor .npy ({e}); send {{\"inputs\": {{name: array}}}}") from None
        if not isinstance(doc, dict) or not isinstance(doc.get("inputs"), dict):
            raise BadRequest("the JSON body must be {\"inputs\": {input name: array}}")
        known = {i.name: i for i in self.inputs}
        feed = {}
        for name, value in doc["inputs"].items():
            if name not in known:
                raise BadRequest(f"the model has no input '{name}' (its inputs: {', '.join(known)})")
            feed[name] = _array_from_json(name, value, known[name].dtype)
        return feed

    def _check(self, feed: Dict[str, np.ndarray]) -> None:
        for i in self.inputs:
            if i.name not in feed:
                raise BadRequest(f"missing input '{i.name}'")
            a = feed[i.name]
            if a.dtype != i.dtype:
                raise BadRequest(f"input '{i.name}' is {a.dtype}, the model takes {i.dtype}")
            if a.ndim != len(i.shape):
                raise BadRequest(f"input '{i.name}' has shape {list(a.shape)}, the model takes {i.shape}")
            for got, want in zip(a.shape, i.shape):
                if isinstance(want, int) and got != want:
                    raise BadRequest(f"input '{i.name}' has shape {list(a.shape)}, the model takes {i.shape}")
        if self.batching:
            rows = {feed[i.name].shape[0] for i in self.inputs}
            if len(rows) != 1:
                raise BadRequest(f"the inputs' batch dims differ: {sorted(rows)}")
            if rows.pop() > self.max_batch_size:
                raise BadRequest(f"a request carries at most {self.max_batch_size} rows (max_batch_size)")

    def metadata(self) -> dict:
        def arg(a):
            return {"name": a.name, "dtype": str(a.dtype), "shape": a.shape}
        return {"model": self.model, "inputs": [arg(a) for a in self.inputs], "outputs": [arg(a) for a in self.outputs],
                "batching": self.batching}

    def stats(self) -> dict:
        ms = sorted(self.latency_ms)
        return {"requests": self.requests, "errors": self.errors, "latency_ms": {
            "p50": _percentile(ms, 50), "p90": _percentile(ms, 90), "p99": _percentile(ms, 99), "count": len(ms)},
            "batch_rows": {str(k): v for k, v in sorted(self.batch_rows.items())}, "batching": self.batching}


def deployment(model: str, replicas: int = 1, threads: int = 1, batching: bool = True, max_batch_size: int = 8,
               batch_wait_ms: float = 5.0, fusion: str = "all"):
    """The application to pass to ``serve.run``: ``replicas`` copies of the model, each reserving
    ``threads`` CPUs of the Ray cluster."""
    # A replica holds up to twice a batch of requests (Ray Serve's max_ongoing_requests; its
    # default, 5, would cap every batch at 5); OpenMP threads sleep when idle (they share cores
    # with the proxy and the other replicas).
    actor = {"num_cpus": threads, "runtime_env": {"env_vars": {"OMP_WAIT_POLICY": "PASSIVE"}}}
    return FusertModel.options(num_replicas=replicas, ray_actor_options=actor,
                               max_ongoing_requests=max(2 * max_batch_size, 8)).bind(
        model, threads=threads, fusion=fusion, batching=batching, max_batch_size=max_batch_size,
        batch_wait_timeout_s=batch_wait_ms / 1000.0)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m fusert.serve", description=__doc__.split("\n\n")[0])
    ap.add_argument("model", help="an ONNX file or fusert YAML model (the same path on every node)")
    ap.add_argument("--replicas", type=int, default=1, help="copies of the model (default 1)")
    ap.add_argument("--threads", type=int, default=1, help="CPU threads per replica (default 1)")
    ap.add_argument("--no-batching", action="store_true", help="run each request alone")
    ap.add_argument("--max-batch-size", type=int, default=8, help="rows per batched run (default 8)")
    ap.add_argument("--batch-wait-ms", type=float, default=5.0, help="longest wait for a batch to fill (default 5)")
    ap.add_argument("--fusion", default="all", help="fusion mode (default all)")
    ap.add_argument("--host", default="127.0.0.1", help="HTTP address (default 127.0.0.1; 0.0.0.0: every interface)")
    ap.add_argument("--port", type=int, default=8000)
    ap.add_argument("--address", default=None,
                    help="a running Ray cluster ('auto', or HEAD:6379 after `ray start --head`); default: start a "
                         "local one on this machine")
    a = ap.parse_args(argv)
    import os

    import ray
    if not os.path.exists(a.model):
        print(f"fusert.serve: {a.model}: no such file", file=sys.stderr)
        return 2
    a.model = os.path.abspath(a.model)  # replicas run in Ray's worker processes, from another directory
    try:  # a model that does not load is reported here, once, not by every replica Ray retries
        o = fusert.SessionOptions()
        o.threads = 1
        fusert.InferenceSession(a.model, o).close()
    except fusert.Error as e:
        print(f"fusert.serve: {e}", file=sys.stderr)
        return 2
    if a.address:
        ray.init(address=a.address)
    else:
        ray.init(include_dashboard=False, _node_ip_address="127.0.0.1")
    serve.start(http_options={"host": a.host, "port": a.port})
    serve.run(deployment(a.model, a.replicas, a.threads, not a.no_batching, a.max_batch_size, a.batch_wait_ms,
                         a.fusion), name="fusert", route_prefix="/")
    print(f"fusert.serve: {a.model} on http://{a.host}:{a.port}/ ({a.replicas} replicas x {a.threads} threads; "
          f"batching {'off' if a.no_batching else f'up to {a.max_batch_size} rows, {a.batch_wait_ms} ms'}); "
          "Ctrl-C stops it", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        serve.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())

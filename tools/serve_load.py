"""Load test of fusert on Ray Serve (python/fusert/serve.py; README "Serving"): a local Ray
cluster bound to 127.0.0.1, the deployment started on it, N concurrent HTTP clients for a bounded
time and request count, every response checked against a direct run of the same input on a
session of the same model in this process (argmax equal, rel. L2 <= 1e-4); throughput with
batching and without; latency p50 / p99 (client side); optionally a replica killed mid-load
(ray.kill): it must be replaced, and every request that was accepted must get the right answer
or an error, never a wrong tensor.

  .cache/serve-venv/bin/python tools/serve_load.py .cache/torchvision-onnx/mobilenet_v2.onnx \\
      --clients 32 --seconds 20 --replicas 1 --threads 2 --kill

Exits 1 on any wrong answer, on errors outside the kill window, or when no replica comes back.
ctest serve_quick runs a short version (--quick).
"""
import argparse
import http.client
import io
import json
import os
import statistics
import sys
import threading
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def npy_bytes(x):
    buf = io.BytesIO()
    np.save(buf, x)
    return buf.getvalue()


def post_npy(port, x, timeout=60):
    """POSTs array `x` (or its .npy bytes) and returns (200, the output array) or (status, text)."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        c.request("POST", "/", body=x if isinstance(x, bytes) else npy_bytes(x),
                  headers={"Content-Type": "application/x-npy", "Accept": "application/x-npy"})
        r = c.getresponse()
        body = r.read()
        if r.status != 200:
            return r.status, body.decode(errors="replace")
        return 200, np.load(io.BytesIO(body), allow_pickle=False)
    finally:
        c.close()


def make_inputs(shape, n, seed):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape).astype(np.float32) for _ in range(n)]


class Load:
    """N clients posting random inputs of a fixed pool; each answer checked against `expected`."""

    def __init__(self, port, pool, expected, clients, seconds, max_requests):
        self.port, self.pool, self.expected = port, [npy_bytes(x) for x in pool], expected  # bodies made once
        self.clients, self.seconds, self.max_requests = clients, seconds, max_requests
        self.lock = threading.Lock()
        self.latency, self.errors, self.wrong, self.sent = [], [], [], 0

    def client(self, k):
        t_end = time.time() + self.seconds
        i = k
        while time.time() < t_end:
            with self.lock:
                if self.sent >= self.max_requests:
                    return
                self.sent += 1
            j = i % len(self.pool)
            i += self.clients
            t0 = time.perf_counter()
            try:
                status, y = post_npy(self.port, self.pool[j])
            except (OSError, http.client.HTTPException) as e:
                status, y = -1, str(e)
            ms = 1e3 * (time.perf_counter() - t0)
            with self.lock:
                if status != 200:
                    self.errors.append((time.time(), status, str(y)[:200]))
                    continue
                self.latency.append(ms)
                want = self.expected[j]
                rel = float(np.linalg.norm(y - want) / max(np.linalg.norm(want), 1e-30)) if y.shape == want.shape else 1.0
                if y.shape != want.shape or rel > 1e-4 or int(np.argmax(y)) != int(np.argmax(want)):
                    self.wrong.append((j, list(y.shape), rel))

    def run(self, during=None):
        threads = [threading.Thread(target=self.client, args=(k,)) for k in range(self.clients)]
        t0 = time.perf_counter()
        for t in threads:
            t.start()
        if during:
            during()
        for t in threads:
            t.join()
        self.wall = time.perf_counter() - t0
        return self

    def summary(self, label):
        lat = sorted(self.latency)
        p = (lambda q: lat[min(len(lat) - 1, int(q * len(lat)))] if lat else float("nan"))
        return {"label": label, "ok": len(lat), "errors": len(self.errors), "wrong": len(self.wrong),
                "throughput_rps": len(lat) / self.wall, "p50_ms": p(0.50), "p99_ms": p(0.99),
                "mean_ms": statistics.mean(lat) if lat else float("nan"),
                "error_samples": [e[1:] for e in self.errors[:3]]}


def replicas_alive(serve):
    st = serve.status().applications.get("fusert")
    if not st:
        return 0
    dep = next(iter(st.deployments.values()))
    return dep.replica_states.get("RUNNING", 0)


def kill_one_replica(ray, serve, log):
    names = [a["name"] for a in ray.util.list_named_actors(all_namespaces=True)
             if a["namespace"] == "serve" and a["name"].startswith("SERVE_REPLICA::")]
    if not names:
        log("kill: no replica actor found")
        return False
    log(f"kill: ray.kill({names[0]})")
    ray.kill(ray.get_actor(names[0], namespace="serve"), no_restart=True)
    return True


def deploy(serve, app, replicas, port, x, log):
    """The app deployed afresh (the previous one deleted first), its replicas running, and three
    answers in a row: only then is a phase's load measured."""
    if "fusert" in serve.status().applications:
        serve.delete("fusert")
    serve.run(app, name="fusert", route_prefix="/")
    deadline = time.time() + 120
    while replicas_alive(serve) < replicas and time.time() < deadline:
        time.sleep(0.5)
    good = 0
    while good < 3 and time.time() < deadline:
        try:
            status, _ = post_npy(port, x)
        except (OSError, http.client.HTTPException):
            status = -1
        good = good + 1 if status == 200 else 0
        if status != 200:
            time.sleep(0.5)
    if good < 3:
        log("deploy: the service did not answer within 120 s")


def request(port, method, path, body=None, headers=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        c.request(method, path, body=body, headers=headers or {})
        r = c.getresponse()
        return r.status, r.read()
    finally:
        c.close()


def check_requests(port, name, x, want, log):
    """The HTTP surface: JSON in and out equals the direct run; /metadata; /stats with latency
    percentiles; bad requests answered 400 naming what is wrong. Returns the failures."""
    bad = []
    status, body = request(port, "POST", "/", json.dumps({"inputs": {name: x.tolist()}}))
    if status != 200:
        bad.append(f"JSON request: {status} {body[:200]!r}")
    else:
        out = next(iter(json.loads(body)["outputs"].values()))
        y = np.asarray(out["data"], np.float32).reshape(out["shape"])
        if y.shape != want.shape or np.linalg.norm(y - want) > 1e-4 * np.linalg.norm(want):
            bad.append("JSON request: a wrong answer")
    status, body = request(port, "GET", "/metadata")
    if status != 200 or json.loads(body)["inputs"][0]["name"] != name:
        bad.append(f"/metadata: {status} {body[:200]!r}")
    status, body = request(port, "GET", "/stats")
    if status != 200 or "p99" not in json.loads(body).get("latency_ms", {}):
        bad.append(f"/stats: {status} {body[:200]!r}")
    cases = [("garbage", b"\x00not json", {}, "neither JSON nor .npy"),
             ("unknown input", json.dumps({"inputs": {"nope": [1.0]}}), {}, "no input 'nope'"),
             ("wrong shape", npy_bytes(x[:, :1]), {"Content-Type": "application/x-npy"}, f"input '{name}'"),
             ("wrong dtype", npy_bytes(x.astype(np.float64)), {"Content-Type": "application/x-npy"}, "float64"),
             ("bad .npy", b"\x93NUMPY broken", {"Content-Type": "application/x-npy"}, "not a .npy")]
    for label, body, headers, fragment in cases:
        status, reply = request(port, "POST", "/", body, headers)
        if status != 400 or fragment not in reply.decode(errors="replace"):
            bad.append(f"{label}: {status} {reply[:200]!r} (expected 400 with {fragment!r})")
    log("requests: " + ("JSON, /metadata, /stats and 5 bad requests as expected" if not bad else "; ".join(bad)))
    return bad


def start_cluster(ray, serve, port, log, attempts=3):
    """A local Ray cluster bound to 127.0.0.1 and Serve's HTTP proxy on `port`. Retried: on a loaded
    2-core machine Serve's proxy actor has been seen to die while it starts (ctest serve_quick under
    make test -j2); a cluster that did not come up is shut down before the next attempt."""
    for attempt in range(1, attempts + 1):
        try:
            ray.init(include_dashboard=False, _node_ip_address="127.0.0.1", num_cpus=os.cpu_count(),
                     log_to_driver=False, configure_logging=False)
            serve.start(http_options={"host": "127.0.0.1", "port": port})
            return
        except Exception as e:  # noqa: BLE001 (Ray raises its own actor and runtime errors)
            if attempt == attempts:
                raise
            log(f"starting Ray Serve failed (attempt {attempt} of {attempts}): {type(e).__name__}: {e}; retrying")
            try:
                serve.shutdown()
            except Exception:  # noqa: BLE001
                pass
            ray.shutdown()
            time.sleep(3)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", nargs="?", default=os.path.join(ROOT, ".cache", "torchvision-onnx", "mobilenet_v2.onnx"))
    ap.add_argument("--clients", type=int, default=32)
    ap.add_argument("--seconds", type=float, default=20, help="each phase's length")
    ap.add_argument("--max-requests", type=int, default=100000, help="each phase's most requests")
    ap.add_argument("--replicas", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2, help="CPU threads per replica")
    ap.add_argument("--max-batch-size", type=int, default=16)
    ap.add_argument("--batch-wait-ms", type=float, default=10)
    ap.add_argument("--port", type=int, default=8765)
    ap.add_argument("--kill", action="store_true", help="a third phase: kill a replica mid-load")
    ap.add_argument("--quick", action="store_true", help="ctest's short version: 8 clients, 6 s phases, a kill")
    ap.add_argument("--json", help="write the figures here")
    a = ap.parse_args()
    if a.quick:
        a.clients, a.seconds, a.max_requests, a.kill = 8, 6, 2000, True
        a.replicas = max(a.replicas, 2)
        a.threads = 1
    log = lambda m: print("[serve_load] " + m, flush=True)  # noqa: E731
    import ray
    from ray import serve

    import fusert
    from fusert.serve import deployment

    o = fusert.SessionOptions()
    o.threads = 1
    direct = fusert.InferenceSession(a.model, o)
    inp = direct.get_inputs()[0]
    shape = [1] + [d if isinstance(d, int) else 1 for d in inp.shape[1:]]
    pool = make_inputs(shape, 64, 7)
    expected = [direct.run(None, {inp.name: x})[0] for x in pool]
    log(f"{a.model}: {len(pool)} inputs {shape}, expected outputs from a direct session")

    start_cluster(ray, serve, a.port, log)
    results, failed = [], False
    try:
        for batching in (False, True):
            deploy(serve, deployment(a.model, a.replicas, a.threads, batching, a.max_batch_size, a.batch_wait_ms),
                   a.replicas, a.port, pool[0], log)
            label = f"{'batched' if batching else 'unbatched'}, {a.clients} clients"
            log(f"phase: {label}, {a.seconds} s")
            s = Load(a.port, pool, expected, a.clients, a.seconds, a.max_requests).run().summary(label)
            log(json.dumps(s))
            results.append(s)
            failed |= s["wrong"] > 0 or s["errors"] > 0
        failed |= bool(check_requests(a.port, inp.name, pool[1], expected[1], log))
        if a.kill:
            killed_at = []

            def during():
                time.sleep(a.seconds / 3)
                killed_at.append(time.time())
                kill_one_replica(ray, serve, log)

            load = Load(a.port, pool, expected, a.clients, a.seconds, a.max_requests).run(during)
            s = load.summary(f"batched, a replica killed at {a.seconds / 3:.0f} s")
            deadline = time.time() + 60
            while replicas_alive(serve) < a.replicas and time.time() < deadline:
                time.sleep(1)
            s["replicas_after"] = replicas_alive(serve)
            log(json.dumps(s))
            results.append(s)
            failed |= s["wrong"] > 0 or s["replicas_after"] < a.replicas or not killed_at
    finally:
        serve.shutdown()
        ray.shutdown()
    if len(results) >= 2 and results[0]["throughput_rps"] > 0:
        log(f"batching: {results[1]['throughput_rps'] / results[0]['throughput_rps']:.2f}x the unbatched throughput")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)
    log("FAILED: wrong answers, errors outside the kill, or no replica back" if failed else "passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""ctest checks of fusert-zoo (stdlib only):

    check_zoo.py quick  ZOO MANIFEST OUTDIR   # our zoo's quick subset passes; its JUnit parses
    check_zoo.py broken ZOO FIXTURE OUTDIR    # tests/zoo/broken.yaml fails with every reason

`broken` also checks --update-baseline / --baseline: a baseline with fewer kernels and a
smaller latency ratio than the run makes the run fail with both reasons.
"""
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    print(r.stdout)
    print(r.stderr, file=sys.stderr)
    return r


def junit(path):
    """Parses the JUnit XML; returns {(model, 'device/fusion'): (kind, message)}; checks counts."""
    root = ET.parse(path).getroot()
    assert root.tag == "testsuites", root.tag
    suites = root.findall("testsuite")
    assert len(suites) == 1, "one testsuite"
    s = suites[0]
    cases = {}
    for tc in s.findall("testcase"):
        assert tc.get("classname", "").startswith("zoo.") and "/" in tc.get("name", ""), tc.attrib
        float(tc.get("time"))
        kind, msg = "ok", ""
        for k in ("failure", "error", "skipped"):
            e = tc.find(k)
            if e is not None:
                kind, msg = k, e.get("message", "")
        cases[(tc.get("classname")[4:], tc.get("name"))] = (kind, msg)
    for attr, kind in (("failures", "failure"), ("errors", "error"), ("skipped", "skipped")):
        want = sum(1 for k, _ in cases.values() if k == kind)
        assert int(s.get(attr)) == want == int(root.get(attr)), f"{attr}: {s.get(attr)} vs {want}"
    assert int(s.get("tests")) == len(cases)
    return cases


def expect(cond, what):
    if not cond:
        sys.exit(f"check_zoo: FAILED: {what}")
    print(f"check_zoo: ok: {what}")


def covers_every_model(manifest):
    """Every models/*.yaml is a `model:` of the manifest (stdlib only: one entry per line)."""
    import glob
    import re
    mdir = os.path.dirname(os.path.abspath(manifest))
    listed = set(re.findall(r"^\s+model:\s*(\S+)\s*$", open(manifest).read(), re.M))
    missing = [os.path.basename(p) for p in glob.glob(os.path.join(mdir, "*.yaml"))
               if os.path.basename(p) not in listed and os.path.abspath(p) != os.path.abspath(manifest)]
    expect(not missing, f"the manifest lists every model in models/ (missing: {missing})")


def quick(zoo, manifest, out):
    covers_every_model(manifest)
    xml, js = os.path.join(out, "zoo_quick.xml"), os.path.join(out, "zoo_quick.json")
    models = "resnet18,mobilenet_v3_small,branch_merge,bert_base_layer,multitask_heads,ppocr_cls.onnx"
    r = run([zoo, "--manifest", manifest, "--models", models, "--device", "all", "--fusion", "none,all,cross",
             "--runs", "1", "--junit", xml, "--json", js])
    expect(r.returncode == 0, "the quick subset passes (exit 0)")
    cases = junit(xml)
    expect(len(cases) == 6 * 2 * 3, f"{len(cases)} test cases: 6 models x 2 devices x 3 fusion modes")
    cpu = [v for k, v in cases.items() if k[1].startswith("cpu/")]
    expect(all(k == "ok" for k, _ in cpu), "every CPU row passes")
    cuda = [v for k, v in cases.items() if k[1].startswith("cuda/")]
    expect(all(k in ("ok", "skipped") for k, _ in cuda), "CUDA rows pass or are skipped")
    rows = json.load(open(js))["rows"]
    expect(all(r["rel_l2_reference"] <= 1e-4 for r in rows if r["status"] == "ok" and r["model"] != "branch_merge"),
           "every passing row is within 1e-4 of its reference")
    expect("[zoo]" in r.stdout and "median ms" in r.stdout, "the table is printed")


def broken(zoo, fixture, out):
    xml, js = os.path.join(out, "zoo_broken.xml"), os.path.join(out, "zoo_broken.json")
    r = run([zoo, "--manifest", fixture, "--junit", xml, "--json", js])
    expect(r.returncode == 1, "a broken zoo exits 1")
    cases = junit(xml)
    expect(cases[("wrong_weights", "cpu/none")][0] == "failure" and "vs the reference" in
           cases[("wrong_weights", "cpu/none")][1], "wrong weights: error above tolerance, in the XML")
    expect(cases[("kernel_bound_too_low", "cpu/all")][0] == "failure" and "kernels 2 > bound 1" in
           cases[("kernel_bound_too_low", "cpu/all")][1], "a kernel bound set too low fails with the counts")
    expect("peak activations" in cases[("kernel_bound_too_low", "cpu/all")][1], "a memory bound set too low fails")
    expect(cases[("kernel_bound_too_low", "cpu/none")][0] == "ok", "the unfused row within its bound passes")
    expect(cases[("missing_model", "cpu/none")][0] == "error" and "no_such_model" in
           cases[("missing_model", "cpu/none")][1], "a model that fails to load is an error naming the file")
    unsupported = [row for row in json.load(open(js))["rows"] if row["model"] == "unsupported_ops"]
    expect(unsupported and all("unsupported by fusert: op types: BitShift x1 (#0)" in row["reason"] and
                               "\n" not in row["reason"] for row in unsupported),
           "an unsupported op is named in the JSON's one-line reason, not only 'unsupported by fusert:'")
    expect(cases[("fine", "cpu/all")][0] == "ok" and cases[("timed", "cpu/all")][0] == "ok",
           "the run went on: the models after the broken ones pass")
    expect("kernels 2 > bound 1" in r.stdout and "vs the reference" in r.stdout, "the reasons are in the table")
    # Baselines: write one, make it stricter than this machine can be, compare.
    base = os.path.join(out, "zoo_baseline.json")
    r = run([zoo, "--manifest", fixture, "--models", "timed", "--baseline", base, "--update-baseline"])
    expect(r.returncode == 0 and os.path.exists(base), "--update-baseline writes the baseline")
    b = json.load(open(base))
    for row in b["rows"]:
        if row["fusion"] == "all":
            row["kernels"] -= 1
            row["ratio_to_unfused"] = row["ratio_to_unfused"] / 100.0
    json.dump(b, open(base, "w"))
    r = run([zoo, "--manifest", fixture, "--models", "timed", "--baseline", base, "--junit", xml])
    cases = junit(xml)
    msg = cases[("timed", "cpu/all")][1]
    expect(r.returncode == 1 and "> baseline" in msg and "kernels" in msg and "the unfused run's" in msg,
           "more kernels and a worse latency ratio than the baseline fail")


def main():
    if len(sys.argv) != 5 or sys.argv[1] not in ("quick", "broken"):
        sys.exit(__doc__)
    os.makedirs(sys.argv[4], exist_ok=True)
    (quick if sys.argv[1] == "quick" else broken)(*sys.argv[2:])
    return 0


if __name__ == "__main__":
    sys.exit(main())

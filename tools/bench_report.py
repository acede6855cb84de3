"""The report of `make bench` (tools/cpu_bench.py): the Markdown table, the summary against the
targets, and the plot. Reads the results dict cpu_bench.py writes as results.json."""
import math

import numpy as np

LABELS = {"fused": "fusert fused", "unfused": "fusert unfused", "ort": "ONNX Runtime", "openvino": "OpenVINO",
          "fused_bf16": "fusert bf16", "openvino_bf16": "OpenVINO bf16", "fused_int8": "fusert int8",
          "ort_int8": "ONNX Runtime int8"}
COLOURS = {"fused": "#1f77b4", "unfused": "#9ecae1", "ort": "#ff7f0e", "openvino": "#2ca02c", "fused_bf16": "#9467bd",
           "openvino_bf16": "#98df8a", "fused_int8": "#d62728", "ort_int8": "#ffbb78"}
BF16_PAIRS = ["fused_bf16/openvino_bf16", "fused_bf16/fused"]
INT8_PAIRS = ["fused_int8/ort_int8", "fused_int8/fused"]


def fmt_ratio(r):
    return f"{r['median']:.2f} ({r['q1']:.2f}-{r['q3']:.2f})" if r else "-"


def geomean(v):
    v = [x for x in v if x and x > 0]
    return math.exp(sum(math.log(x) for x in v) / len(v)) if v else float("nan")


def run_title(run):
    return (f"{run['threads']} thread{'s' if run['threads'] > 1 else ''}, batch {run.get('batch', 1)}"
            f"{', one busy process' if run['under_load'] else ''}: FMA peak "
            f"{run['fma_peak']['gflops']:.0f} GFLOP/s ({run['fma_peak']['isa']})")


def model_row(name, row, engines):
    if "error" in row:
        return f"| {name} | error: {row['error'][:160]} |"
    cells = [name, row.get("kind", ""), f"{row['flops'] / 1e9:.2f}"]
    for e in engines:
        t = row[e]
        cells.append(f"{t['median_ms']:.2f} ± {(t['q3_ms'] - t['q1_ms']) / 2:.2f}")
    cells += [fmt_ratio(row.get("fused/best")), fmt_ratio(row.get("fused/ort")), fmt_ratio(row.get("fused/openvino")),
              fmt_ratio(row.get("fused/unfused"))]
    if "fused_bf16" in engines:
        cells += [fmt_ratio(row.get(k)) for k in BF16_PAIRS]
    if "fused_int8" in engines:
        cells += [fmt_ratio(row.get(k)) for k in INT8_PAIRS]
    f = row["fused"]
    cells.append(f"{f['gflops']:.0f} ({100 * f['peak_fraction']:.0f}%)")
    ref = row.get("reference_loop_pct")
    cells.append("-" if ref is None else f"{ref:.1f}%")
    return "| " + " | ".join(cells) + " |"


def summary_lines(run):
    """Geometric means of fused / best peer per kind, and the models above 1.2."""
    out = []
    for kind in ("zoo", "real"):
        rows = {n: r for n, r in run["models"].items() if "error" not in r and r.get("kind") == kind}
        if not rows:
            continue
        ratios = {n: r["fused/best"]["median"] for n, r in rows.items()}
        worst = sorted(((v, n) for n, v in ratios.items() if v > 1.2), reverse=True)
        out.append(f"- {kind}: geometric mean of fused / best peer {geomean(list(ratios.values())):.2f} over "
                   f"{len(ratios)} model{'s' if len(ratios) != 1 else ''}; above 1.2: " + (", ".join(f"{n} {v:.2f}" for v, n in worst) or "none"))
    return out


def table(results):
    engines = results["engines"]
    lines = []
    for run in results["runs"]:
        lines += [f"**{run_title(run)}**", ""]
        bf16, int8 = "fused_bf16" in engines, "fused_int8" in engines
        lines.append("| model | set | GFLOP | " + " | ".join(f"{LABELS[e]} ms" for e in engines) +
                     " | fused/best peer | fused/ORT | fused/OpenVINO | fused/unfused" +
                     (" | bf16/OpenVINO bf16 | bf16/fused" if bf16 else "") +
                     (" | int8/ORT int8 | int8/fused" if int8 else "") + " | fused GFLOP/s (% peak) "
                     "| reference loops |")
        lines.append("|" + "---|" * (3 + len(engines) + 6 + (2 if bf16 else 0) + (2 if int8 else 0)))
        for name, row in run["models"].items():
            lines.append(model_row(name, row, engines))
        lines += [""] + summary_lines(run)
        if run["under_load"]:
            lines.append("- slowdown under load (median loaded / median quiet, same thread count): " + "; ".join(
                f"{n} " + ", ".join(f"{e} {r['slowdown'][e]:.2f}x" for e in engines if e != "unfused")
                for n, r in run["models"].items() if "slowdown" in r))
        lines.append("")
    lines.append("Times: median ± half the interquartile range over the rounds. Ratios: median (interquartile "
                 "range) of the per-round ratios; the engines are interleaved run by run. 'best peer' is, in each "
                 "round, the faster of ONNX Runtime and OpenVINO. 'reference loops': the share of fusert's fused "
                 "time in steps that run a plain reference loop (infer --profile).")
    return "\n".join(lines)


def plot(results, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    runs = [r for r in results["runs"] if not r["under_load"]]
    engines = results["engines"]
    fig, axes = plt.subplots(len(runs), 1, figsize=(16, 4.8 * len(runs)), squeeze=False)
    width = 0.8 / len(engines)
    for ax, run in zip(axes[:, 0], runs):
        names = [n for n, r in run["models"].items() if "error" not in r]
        x = np.arange(len(names))
        for i, e in enumerate(engines):
            med = [run["models"][n][e]["median_ms"] for n in names]
            ax.bar(x + (i - (len(engines) - 1) / 2) * width, med, width, color=COLOURS[e], label=LABELS[e])
        for j, n in enumerate(names):
            top = max(run["models"][n][e]["median_ms"] for e in engines)
            ax.text(j, top * 1.15, f"{run['models'][n]['fused/best']['median']:.2f}", ha="center", fontsize=8)
        ax.set_yscale("log")
        # Readable values on the log axis: 1, 2, 5 per decade, plain numbers; room for the labels.
        from matplotlib.ticker import LogLocator, NullFormatter, ScalarFormatter
        ax.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_major_formatter(ScalarFormatter())
        ax.yaxis.set_minor_formatter(NullFormatter())
        ax.grid(True, axis="y", alpha=0.3)
        top = max(run["models"][n][e]["median_ms"] for n in names for e in engines)
        ax.set_ylim(top=top * 2.0)
        ax.set_xticks(x)
        ax.set_xticklabels(names, rotation=30, ha="right", fontsize=8)
        ax.set_ylabel("latency per inference, ms (log)")
        ax.set_title(f"{run['threads']} thread{'s' if run['threads'] > 1 else ''}, batch {run.get('batch', 1)} "
                     "(label: fused / best peer)",
                     fontsize=10)
        ax.legend(fontsize=8, ncol=len(engines))
    v = results["versions"]
    fig.suptitle(f"fusert vs ONNX Runtime {v.get('onnxruntime')} and OpenVINO {v.get('openvino')}, "
                 f"{results['machine']['cpu']}", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)

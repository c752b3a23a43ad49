#!/usr/bin/env python3
"""perf/report/compare_perf.py BEFORE.csv AFTER.csv [--title T] — a before/after table of two
`vkgrad perf` CSVs of the same device, as Markdown on stdout.

Rows are matched by (op, variant, shape). Per row: GPU time before and after
(timestamp medians), the speedup, the fraction of the device's measured peak
after (the CSV's peak_fraction: max(bytes/peak_GBps, flops/peak_GFLOPs) over
the GPU time), and, where a PyTorch figure for the same shape is known (CUDA,
fp32, TF32 off, measured on the H200 machine; see SPEC §8), the ratio of our
time to it (< 1: we are faster). Standard library only."""
import csv
import sys

# PyTorch 2.11 CUDA fp32 reference points (SPEC §8), as GPU milliseconds.
# SGEMM is given as throughput: 2·4096³ flop at 50.5 TFLOP/s.
PYTORCH_MS = {
    ("OUT_PROD", "m=4096.n=4096.k=4096"): 2 * 4096**3 / 50.5e12 * 1e3,
    ("SSM_CONV_BACK", "d_conv=4.d_inner=4352.n_tok=4096.n_seqs=1"): 0.37,
}
PYTORCH_NOTE = {
    ("CROSS_ENTROPY_LOSS_BACK", "n_class=32000.n_rows=4096"):
        "PyTorch 1.85 ms is forward+backward",
    ("SSM_SCAN_BACK", "d_state=128.head_dim=64.n_head=16.n_group=1.n_tok=64.n_seqs=1"):
        "plain PyTorch scan fwd+bwd 42.8 ms",
}


def load(path):
    rows = {}
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            rows[(r["op"], r["variant"], r["shape"])] = r
    return rows


def num(s):
    try:
        v = float(s)
        return v if v == v else None
    except (TypeError, ValueError):
        return None


def main(argv):
    args = [a for a in argv[1:] if not a.startswith("--")]
    if len(args) != 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    try:
        before, after = load(args[0]), load(args[1])
    except (OSError, KeyError) as e:
        print(f"compare_perf: cannot read {e}", file=sys.stderr)
        return 2
    devs = {r["device"] for r in list(before.values()) + list(after.values())}
    print(f"Device: {', '.join(sorted(devs))}. GPU kernel times are medians of timestamp queries.\n")
    print("| op | variant | shape | before ms | after ms | speedup | after: fraction of measured peak | vs PyTorch |")
    print("|---|---|---|---|---|---|---|---|")
    for key, a in after.items():
        b = before.get(key, {})
        tb, ta = num(b.get("gpu_ms")), num(a["gpu_ms"])
        if ta is None:
            continue
        op, variant, shape = key
        sp = f"{tb / ta:.2f}×" if tb else "–"
        frac = num(a.get("peak_fraction"))
        pt = PYTORCH_MS.get((op, shape))
        vs = f"{ta / pt:.2f}× PyTorch's time ({pt:.3f} ms)" if pt else PYTORCH_NOTE.get((op, shape), "")
        print(f"| {op} | {variant} | {shape} | {f'{tb:.4g}' if tb else '–'} | {ta:.4g} | {sp} | "
              f"{frac:.1%} | {vs} |" if frac is not None else
              f"| {op} | {variant} | {shape} | {f'{tb:.4g}' if tb else '–'} | {ta:.4g} | {sp} | – | {vs} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

#!/usr/bin/env python3
"""Writes the README's results table from a report's perf.csv.

    perf/report/readme_table.py README.md reports/nvidia-h200/perf.csv
    perf/report/readme_table.py --check README.md reports/nvidia-h200/perf.csv

Rewrites the text between the lines `<!-- perf-table:begin -->` and
`<!-- perf-table:end -->` of README.md with one row per shape of SHOWN, as
`vkgrad perf` measured it. --check writes nothing and exits 1 when the
README's text differs from what would be written (the test suite runs it).
Standard library only.
"""
import csv
import difflib
import sys

BEGIN = "<!-- perf-table:begin -->"
END = "<!-- perf-table:end -->"

# (op, variant, shape as the CSV names it, how the README names it): the
# largest shape of each op's sweep and the training shapes most read.
SHOWN = [
    ("OUT_PROD", "dW", "m=4096.n=4096.k=4096", "OUT_PROD dW, 4096×4096×4096"),
    ("OUT_PROD", "dX_transposed_src1", "m=4096.n=4096.k=4096",
     "OUT_PROD dX (transposed src1), 4096×4096×4096"),
    ("CROSS_ENTROPY_LOSS_BACK", "one_hot", "n_class=32000.n_rows=4096",
     "CROSS_ENTROPY_LOSS_BACK, 4096 rows × 32000 classes"),
    ("CROSS_ENTROPY_LOSS_BACK", "one_hot", "n_class=50257.n_rows=4096",
     "CROSS_ENTROPY_LOSS_BACK, 4096 × 50257 (GPT-2)"),
    ("CROSS_ENTROPY_LOSS_BACK", "one_hot", "n_class=128256.n_rows=1024",
     "CROSS_ENTROPY_LOSS_BACK, 1024 × 128256 (Llama-3)"),
    ("SSM_CONV_BACK", "", "d_conv=4.d_inner=4352.n_tok=4096.n_seqs=1",
     "SSM_CONV_BACK, 4352 channels × 4096 tokens, d_conv 4"),
    ("SSM_SCAN_BACK", "mamba2", "d_state=128.head_dim=64.n_head=64.n_group=1.n_tok=4096.n_seqs=1",
     "SSM_SCAN_BACK Mamba-2, d_state 128, 64 heads × 64, 4096 tokens"),
    ("SSM_SCAN_BACK", "mamba1", "d_state=16.d_inner=1536.n_tok=4096.n_seqs=1",
     "SSM_SCAN_BACK Mamba-1, d_state 16, d_inner 1536, 4096 tokens"),
    ("SSM_SCAN_BACK", "mamba1", "d_state=16.d_inner=1536.n_tok=512.n_seqs=8",
     "SSM_SCAN_BACK Mamba-1, d_state 16, d_inner 1536, 8 × 512 tokens"),
]


def num(row, key):
    try:
        return float(row[key])
    except (KeyError, ValueError):
        return None


def rate(row):
    """The rate nearer its roof: (text, fraction of that roof)."""
    gbps, gflops = num(row, "gbps"), num(row, "gflops")
    peak_gbps, peak_gflops = num(row, "peak_gbps"), num(row, "peak_gflops")
    mem = gbps / peak_gbps if gbps and peak_gbps else 0.0
    fma = gflops / peak_gflops if gflops and peak_gflops else 0.0
    if fma >= mem:
        return f"{gflops / 1000:.1f} TFLOP/s", fma
    return f"{gbps / 1000:.2f} TB/s", mem


def table(csv_path):
    with open(csv_path, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        sys.exit(f"readme_table: {csv_path}: no rows")
    by_key = {(r["op"], r["variant"], r["shape"]): r for r in rows}
    first = rows[0]
    lines = [
        f"{first['device']}; the device's own peaks as its probes measured them: "
        f"copy {num(first, 'peak_gbps') / 1000:.2f} TB/s, "
        f"fp32 FMA {num(first, 'peak_gflops') / 1000:.1f} TFLOP/s.",
        "",
        "| backward op, shape | GPU time | rate | of measured peak |",
        "|---|---|---|---|",
    ]
    for op, variant, shape, label in SHOWN:
        r = by_key.get((op, variant, shape))
        if r is None:
            sys.exit(f"readme_table: {csv_path}: no row {op} {variant} {shape}")
        if not r["placement"].startswith("Vulkan"):
            lines.append(f"| {label} | on the CPU: {r['reason']} | | |")
            continue
        text, frac = rate(r)
        lines.append(f"| {label} | {num(r, 'gpu_ms'):.3g} ms | {text} | {100 * frac:.1f}% |")
    return "\n".join(lines) + "\n"


def rewrite(readme_text, body):
    head, sep, rest = readme_text.partition(BEGIN + "\n")
    old, sep2, tail = rest.partition(END)
    if not sep or not sep2:
        sys.exit(f"readme_table: the README lacks the lines {BEGIN} and {END}")
    return head + sep + body + sep2 + tail


def main(argv):
    check = "--check" in argv
    args = [a for a in argv if a != "--check"]
    if len(args) != 2:
        sys.exit("usage: readme_table.py [--check] README.md perf.csv")
    readme, csv_path = args
    with open(readme, encoding="utf-8") as f:
        old = f.read()
    new = rewrite(old, table(csv_path))
    if check:
        if new != old:
            sys.stdout.writelines(difflib.unified_diff(
                old.splitlines(True), new.splitlines(True), readme, "written from " + csv_path))
            print(f"readme_table: {readme} is stale: run perf/report/readme_table.py "
                  f"{readme} {csv_path}", file=sys.stderr)
            return 1
        return 0
    if new != old:
        with open(readme, "w", encoding="utf-8") as f:
            f.write(new)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

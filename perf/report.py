#!/usr/bin/env python3
"""perf/report.py — turn a report directory's raw results into plot data and
index.html (called by perf/plot.sh; standard library only).

Inputs in DIR (written by perf/run.sh):
  perf.csv        `vkgrad perf` rows (columns in perf/bench.h)
  conform.jsonl   `vkgrad conform --json` records (one per case and backend)
  conform.txt     the conformance console summary
  demo.txt        `vkgrad demo` output
  devices.txt     `vkgrad devices` output
  device.txt      "index<TAB>slug<TAB>description" of this device

  report.py data DIR   writes DIR/data/{placement,tolerance,speedup,roofline,roof}.tsv
  report.py html DIR   writes DIR/index.html from reports/index.html.template
"""
import csv
import html
import json
import math
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TEMPLATE = os.path.join(HERE, "..", "reports", "index.html.template")


def num(s):
    try:
        v = float(s)
        return v if math.isfinite(v) else None
    except (TypeError, ValueError):
        return None


def read_perf(d):
    path = os.path.join(d, "perf.csv")
    if not os.path.exists(path):
        return []
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def read_conform(d):
    path = os.path.join(d, "conform.jsonl")
    recs = []
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line:
                    recs.append(json.loads(line))
    return recs


def short(op):
    return {"OUT_PROD": "out_prod", "CROSS_ENTROPY_LOSS_BACK": "ce_back",
            "SSM_CONV_BACK": "conv_back", "SSM_SCAN_BACK": "scan_back"}.get(op, op.lower())


def row_label(r):
    v = r["variant"]
    shape = r["shape"].replace(".n_seqs=1", "").replace(".n_group=1", "")
    return "%s%s %s" % (short(r["op"]), (" " + v) if v and v != "one_hot" else "", shape)


def tsv_field(s):
    return '"%s"' % str(s).replace('"', "'").replace("\t", " ")


def write_data(d):
    rows = read_perf(d)
    out = os.path.join(d, "data")
    os.makedirs(out, exist_ok=True)
    # placement: y index, on_gpu (1/0), label, placement text
    with open(os.path.join(out, "placement.tsv"), "w") as f:
        f.write("# y\ton_gpu\tlabel\twhere\n")
        for i, r in enumerate(rows):
            on_gpu = 1 if r["placement"].startswith("Vulkan") else 0
            where = r["placement"] if on_gpu else (r["reason"] or r["placement"])
            if r["note"]:
                where += "  [" + r["note"] + "]"
            f.write("%d\t%d\t%s\t%s\n" % (len(rows) - 1 - i, on_gpu, tsv_field(row_label(r)),
                                          tsv_field(where)))
    # speedup: index, label, cpu_ms / wall_ms, cpu_ms / gpu_ms, sgemm / gpu
    with open(os.path.join(out, "speedup.tsv"), "w") as f:
        f.write("# i\tlabel\twall_speedup\tkernel_speedup\tsgemm_ratio\n")
        for i, r in enumerate(rows):
            cpu, wall, gpu, sg = (num(r["cpu_ms"]), num(r["wall_ms"]), num(r["gpu_ms"]),
                                  num(r["sgemm_ms"]))
            if not r["placement"].startswith("Vulkan"):
                continue
            ws = cpu / wall if cpu and wall else None
            ks = cpu / gpu if cpu and gpu else None
            ss = sg / gpu if sg and gpu else None
            f.write("%d\t%s\t%s\t%s\t%s\n" % (i, tsv_field(row_label(r)),
                                             "%g" % ws if ws else "NaN",
                                             "%g" % ks if ks else "NaN",
                                             "%g" % ss if ss else "NaN"))
    # roofline: intensity, achieved GFLOP/s, op index, label
    ops = ["OUT_PROD", "CROSS_ENTROPY_LOSS_BACK", "SSM_CONV_BACK", "SSM_SCAN_BACK"]
    peak_bw = peak_fl = None
    with open(os.path.join(out, "roofline.tsv"), "w") as f:
        f.write("# intensity\tgflops\top_index\tlabel\n")
        for r in rows:
            g, b, fl = num(r["gflops"]), num(r["bytes"]), num(r["flops"])
            peak_bw = peak_bw or num(r["peak_gbps"])
            peak_fl = peak_fl or num(r["peak_gflops"])
            if not g or not b or not fl:
                continue
            k = ops.index(r["op"]) if r["op"] in ops else 4
            f.write("%g\t%g\t%d\t%s\n" % (fl / b, g, k, tsv_field(row_label(r))))
    with open(os.path.join(out, "roof.tsv"), "w") as f:
        f.write("# peak_gbps\tpeak_gflops\n%s\t%s\n" % (peak_bw or "NaN", peak_fl or "NaN"))
    # tolerance: case index, worst bound usage (floored for log scale), status index, label
    recs = read_conform(d)
    statuses = ["Pass", "QualityWarning", "Fail", "NotSupported", "Crash", "Timeout",
                "DeviceLost"]
    with open(os.path.join(out, "tolerance.tsv"), "w") as f:
        f.write("# i\tbound_usage\tstatus_index\tbackend_index\tlabel\n")
        backends = sorted({r.get("backend", "") for r in recs})
        i = 0
        for r in recs:
            us = [g.get("bound_usage") for g in r.get("grads", [])
                  if isinstance(g.get("bound_usage"), (int, float))]
            us = [u for u in us if math.isfinite(u)]
            if not us:
                continue
            st = r.get("status", "")
            si = statuses.index(st) if st in statuses else len(statuses)
            f.write("%d\t%g\t%d\t%d\t%s\n" % (i, max(max(us), 1e-6), si,
                                              backends.index(r.get("backend", "")),
                                              tsv_field(r.get("case", ""))))
            i += 1
    with open(os.path.join(out, "tolerance_backends.txt"), "w") as f:
        f.write("\n".join(sorted({r.get("backend", "") for r in recs})) + "\n")
    return 0


def read_text(d, name, missing):
    p = os.path.join(d, name)
    if not os.path.exists(p):
        return missing
    with open(p, errors="replace") as f:
        return f.read()


def perf_table(rows):
    if not rows:
        return "<p>No perf results.</p>"
    cols = [("op", "op"), ("variant", "variant"), ("shape", "shape"), ("placement", "placement"),
            ("gpu_ms", "GPU ms"), ("wall_ms", "wall ms"), ("cpu_ms", "CPU ms"),
            ("sgemm_ms", "sgemm ms"), ("gbps", "GB/s"), ("gflops", "GFLOP/s"),
            ("peak_fraction", "of peak"), ("note", "note")]
    out = ["<table class='perf'><tr>" + "".join("<th>%s</th>" % h for _, h in cols) + "</tr>"]
    for r in rows:
        cells = []
        for k, _ in cols:
            v = r.get(k, "")
            if k == "placement" and not v.startswith("Vulkan"):
                v = "%s: %s" % (v, r.get("reason", ""))
                cells.append("<td class='cpu'>%s</td>" % html.escape(v))
                continue
            n = num(v)
            if n is not None and k not in ("shape",):
                v = "%.1f%%" % (100 * n) if k == "peak_fraction" else "%.4g" % n
            cells.append("<td>%s</td>" % html.escape(v))
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</table>")
    return "\n".join(out)


def conform_counts(recs):
    counts = {}
    for r in recs:
        key = (r.get("backend", ""), r.get("status", ""))
        counts[key] = counts.get(key, 0) + 1
    if not counts:
        return "<p>No conformance records.</p>"
    backends = sorted({b for b, _ in counts})
    statuses = sorted({s for _, s in counts})
    out = ["<table><tr><th>backend</th>" + "".join("<th>%s</th>" % html.escape(s)
                                                  for s in statuses) + "</tr>"]
    for b in backends:
        out.append("<tr><td>%s</td>%s</tr>" % (html.escape(b), "".join(
            "<td>%d</td>" % counts.get((b, s), 0) for s in statuses)))
    out.append("</table>")
    return "\n".join(out)


def write_html(d):
    with open(TEMPLATE) as f:
        page = f.read()
    dev = read_text(d, "device.txt", "").strip().split("\t")
    slug = dev[1] if len(dev) > 1 else os.path.basename(os.path.abspath(d))
    desc = dev[2] if len(dev) > 2 else slug
    rows = read_perf(d)
    peaks = ""
    if rows and num(rows[0].get("peak_gbps")) and num(rows[0].get("peak_gflops")):
        peaks = ("Measured peaks (built-in probes): copy %.1f GB/s, fp32 FMA %.1f GFLOP/s."
                 % (num(rows[0]["peak_gbps"]), num(rows[0]["peak_gflops"])))
    subs = {
        "TITLE": html.escape("vkgrad report: " + desc),
        "SLUG": html.escape(slug),
        "DEVICE": html.escape(desc),
        "GENERATED": html.escape(time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())),
        "PEAKS": html.escape(peaks),
        "DEVICES_TXT": html.escape(read_text(d, "devices.txt", "(not recorded)")),
        "DEMO_TXT": html.escape(read_text(d, "demo.txt", "(not recorded)")),
        "CONFORM_TXT": html.escape(read_text(d, "conform.txt", "(not recorded)")[-6000:]),
        "CONFORM_COUNTS": conform_counts(read_conform(d)),
        "PERF_TABLE": perf_table(rows),
    }
    for k, v in subs.items():
        page = page.replace("{{%s}}" % k, v)
    with open(os.path.join(d, "index.html"), "w") as f:
        f.write(page)
    return 0


def main(argv):
    if len(argv) != 3 or argv[1] not in ("data", "html"):
        sys.stderr.write("usage: report.py data|html DIR\n")
        return 2
    return write_data(argv[2]) if argv[1] == "data" else write_html(argv[2])


if __name__ == "__main__":
    sys.exit(main(sys.argv))

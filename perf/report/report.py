#!/usr/bin/env python3
"""perf/report/report.py — turn a report directory's raw results into plot data and
index.html (called by perf/report/plot.sh; standard library only).

Inputs in DIR (written by perf/run.sh):
  perf.csv        `vkgrad perf` rows (columns in perf/bench.h)
  conform.jsonl   `vkgrad conform --json` records (one per case and backend)
  conform.txt     the conformance console summary
  compare.txt     `vkgrad compare` against the committed baseline (optional)
  pipelines.csv   `vkgrad perf --pipeline-stats`: the driver's statistics per kernel (optional)
  stages.csv      `vkgrad perf --stages`: each op's time per dispatch (optional)
  demo.txt        `vkgrad demo` output
  devices.txt     `vkgrad devices` output
  device.txt      "index<TAB>slug<TAB>description" of this device

  report.py data DIR   writes DIR/data/{placement,tolerance,speedup,roofline,roof}.tsv
  report.py html DIR   writes DIR/index.html from perf/report/index.html.template
"""
import csv
import html
import json
import math
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TEMPLATE = os.path.join(HERE, "index.html.template")


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
                if not line:
                    continue
                rec = json.loads(line)
                # the header and trailer records frame the file; they are no case
                if rec.get("schema") != "vkgrad-conform-run":
                    recs.append(rec)
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


# Conformance records name their op only as the first part of the case name
# ("ssm_scan_back.mamba2.d_state=..."). The tolerance chart and the per-op
# table group cases by op, ops by family, in this order; ops not listed
# here are glue ops, train_* cases are whole training graphs.
FAMILIES = [
    ("out_prod", ["out_prod"]),
    ("mul_mat", ["mul_mat"]),
    ("cross entropy", ["cross_entropy_loss", "cross_entropy_loss_back"]),
    ("ssm_conv", ["ssm_conv", "ssm_conv_back"]),
    ("ssm_scan", ["ssm_scan", "ssm_scan_back"]),
    ("glue ops", []),
    ("train graphs", []),
]
GLUE = len(FAMILIES) - 2
TRAIN = len(FAMILIES) - 1
STATUSES = ["Pass", "QualityWarning", "Fail", "NotSupported", "Crash", "Timeout", "DeviceLost"]
# A gradient whose bound allows fewer roundings than this is a short chain:
# a correct kernel may use most of its bound there (see index.html).
SHORT_K = 16


def case_op(case):
    return case.split(".", 1)[0]


def family_of(op):
    for i, (_, ops) in enumerate(FAMILIES):
        if op in ops:
            return i
    return TRAIN if op.startswith("train_") else GLUE


def worst_grad(r):
    """(usage, K, grad name) of the record's gradient with the largest finite
    bound usage; usage None when the record has none (NotSupported, Crash)."""
    best = None
    for g in r.get("grads", []):
        u = g.get("bound_usage")
        if not isinstance(u, (int, float)) or not math.isfinite(u):
            continue
        if best is None or u > best[0]:
            k = g.get("bound_K")
            best = (float(u), k if isinstance(k, (int, float)) else None, g.get("name", ""))
    return best or (None, None, "")


def grouped_ops(recs):
    """[(family index, op, [records in run order])] in chart order."""
    by_op = {}
    for r in recs:
        by_op.setdefault(case_op(r.get("case", "")), []).append(r)
    order = []
    for fi, (_, ops) in enumerate(FAMILIES):
        members = [o for o in ops if o in by_op]
        if not ops:
            members = [o for o in by_op if family_of(o) == fi]  # first-seen order
        order += [(fi, o, by_op[o]) for o in members]
    return order


def write_tolerance(d, recs, out):
    """tolerance.tsv: one row per record, x grouped by op with gaps between ops
    and wider ones between families; tolerance_layout.gp: the op ticks, the
    family bands and labels, and the y rows for exact and missing results."""
    backends = sorted({r.get("backend", "") for r in recs})
    groups = grouped_ops(recs)
    nonzero = [u for _, _, rs in groups for r in rs
               for u in [worst_grad(r)[0]] if u is not None and u > 0]
    lo = min(nonzero) if nonzero else 1e-6
    exact_y = 10.0 ** (math.floor(math.log10(lo)) - 1)  # a decade below the smallest error
    hi_e = max(0, math.ceil(math.log10(max(nonzero)))) if nonzero else 0  # top decade
    none_y = 10.0 ** (hi_e + 1)  # records with no error to show: a row above every point
    ticks, bands = [], []
    x = 0.0
    prev_f = None
    with open(os.path.join(out, "tolerance.tsv"), "w") as f:
        f.write("# x\tbound_usage\tstatus_index\tshort_chain\tK\tfamily_index\tbackend_index"
                "\top\tcase\n")
        for fi, op, rs in groups:
            if prev_f is not None:
                x += 5.0 if fi != prev_f else 3.0
            if fi != prev_f:
                bands.append([fi, x - 0.8, None])
            prev_f = fi
            x0 = x
            for j, r in enumerate(rs):
                if j:
                    x += 1.0
                u, k, _ = worst_grad(r)
                st = r.get("status", "")
                si = STATUSES.index(st) if st in STATUSES else len(STATUSES)
                y = none_y if u is None else (u if u > 0 else exact_y)
                short_chain = 1 if (k is not None and k < SHORT_K) else 0
                f.write("%g\t%g\t%d\t%d\t%s\t%d\t%d\t%s\t%s\n" % (
                    x, y, si, short_chain, "NaN" if k is None else "%g" % k, fi,
                    backends.index(r.get("backend", "")), tsv_field(op),
                    tsv_field(r.get("case", "") + " " + r.get("backend", ""))))
            ticks.append(((x0 + x) / 2, op))
            bands[-1][2] = x + 0.8
    has_none = any(worst_grad(r)[0] is None for _, _, rs in groups for r in rs)
    with open(os.path.join(out, "tolerance_layout.gp"), "w") as f:
        f.write("# written by perf/report/report.py: op ticks and family bands of tolerance.tsv\n")
        f.write("xmax = %g\n" % ((bands[-1][2] + 0.5) if bands else 1))
        f.write("exact_y = %g\nnone_y = %g\nhas_none = %d\ntop_y = %g\n"
                % (exact_y, none_y, int(has_none), 10.0 ** hi_e))
        counts = [0] * 5  # Pass, QualityWarning, Fail, NotSupported, the rest
        for r in recs:
            st = r.get("status", "")
            counts[min(STATUSES.index(st) if st in STATUSES else 4, 4)] += 1
        f.write("".join("st_n%d = %d\n" % (i, c) for i, c in enumerate(counts)))
        f.write("set xtics (%s)\n" % ", ".join('"%s" %g' % (op, tx) for tx, op in ticks)
                if ticks else "set xtics ()\n")
        ytics = ['"exact (0)" %g' % exact_y]
        e = int(round(math.log10(exact_y))) + 1
        while e <= hi_e:
            ytics.append('"1e%d" %g' % (e, 10.0 ** e) if e < 0 else '"%g" %g' % ((10.0 ** e,) * 2))
            e += 1
        if has_none:
            ytics.append('"no result" %g' % none_y)
        f.write("set ytics (%s)\n" % ", ".join(ytics))
        for i, (fi, b0, b1) in enumerate(bands):
            colour = "#eef3fa" if i % 2 == 0 else "#fbf7ee"
            f.write("set object %d rect from %g, graph 0 to %g, graph 1 behind "
                    "fc rgb '%s' fs solid 1.0 noborder\n" % (i + 1, b0, b1, colour))
            f.write("set label %d \"%s\" at %g, graph 1.025 center font ',11'\n"
                    % (i + 1, FAMILIES[fi][0], (b0 + b1) / 2))
    with open(os.path.join(out, "tolerance_backends.txt"), "w") as f:
        f.write("\n".join(backends) + "\n")


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
    # roofline: intensity, achieved GFLOP/s, op index (the four backward ops 0-3,
    # every other op, the training ops, 4), label
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
    write_tolerance(d, read_conform(d), out)
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


def pipeline_table(d):
    """pipelines.csv pivoted: a row per (kernel, spec), a column per
    statistic in the order the driver lists them."""
    p = os.path.join(d, "pipelines.csv")
    if not os.path.exists(p):
        return "<p>No pipeline statistics recorded.</p>"
    with open(p, newline="") as f:
        recs = list(csv.DictReader(f))
    notes, stats, rows = [], [], {}
    for r in recs:
        kernel, stat = r.get("kernel", ""), r.get("statistic", "")
        if not kernel:
            notes.append("%s: %s" % (stat, r.get("value", "")))
            continue
        if stat not in stats:
            stats.append(stat)
        # A row per pipeline: its executables' statistics and vkgrad's own
        # (empty executable) side by side.
        key = (kernel, r.get("spec", ""))
        vals = rows.setdefault(key, {"": ""})
        vals[stat] = r.get("value", "")
        if r.get("executable") and not vals[""]:
            vals[""] = r["executable"]
    out = ["<p>%s</p>" % html.escape(n) for n in notes]
    if rows:
        out.append("<table class='perf'><tr><th>kernel</th><th>spec</th><th>executable</th>" +
                   "".join("<th>%s</th>" % html.escape(s) for s in stats) + "</tr>")
        for (kernel, spec), vals in rows.items():
            out.append("<tr><td class='l'><code>%s</code></td><td class='l'>%s</td><td>%s</td>%s</tr>"
                       % (html.escape(kernel), html.escape(spec), html.escape(vals[""]),
                          "".join("<td>%s</td>" % html.escape(vals.get(s, "")) for s in stats)))
        out.append("</table>")
    return "\n".join(out) if out else "<p>No pipeline statistics recorded.</p>"


def stages_table(d):
    """stages.csv as a table: a row per dispatch, with its share of the
    node's time; a shape without dispatch rows shows its note."""
    p = os.path.join(d, "stages.csv")
    if not os.path.exists(p):
        return "<p>No stage times recorded.</p>"
    with open(p, newline="") as f:
        recs = list(csv.DictReader(f))
    if not recs:
        return "<p>No stage times recorded.</p>"
    out = ["<table class='perf'><tr><th>op</th><th>variant</th><th>shape</th><th>dispatch</th>"
           "<th>kernel</th><th>ms</th><th>of the node</th><th>note</th></tr>"]
    for r in recs:
        ms, node = num(r.get("gpu_ms", "")), num(r.get("node_ms", ""))
        share = "%.0f%%" % (100.0 * ms / node) if ms is not None and node else ""
        out.append("<tr><td class='l'>%s</td><td class='l'>%s</td><td class='l'>%s</td><td>%s</td>"
                   "<td class='l'><code>%s</code></td><td>%s</td><td>%s</td><td class='l'>%s</td></tr>"
                   % (html.escape(r.get("op", "")), html.escape(r.get("variant", "")),
                      html.escape(r.get("shape", "")), html.escape(r.get("dispatch", "")),
                      html.escape(r.get("kernel", "")),
                      "%.4g" % ms if ms is not None else "", share,
                      html.escape(r.get("note", ""))))
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


def op_table(recs):
    """Per op, in the tolerance chart's order: cases, passes, the other
    statuses, the range of K, and the worst bound usage with its case."""
    groups = grouped_ops(recs)
    if not groups:
        return "<p>No conformance records.</p>"
    out = ["<table class='ops'><tr><th>family</th><th>op</th><th>cases</th><th>passes</th>"
           "<th>other statuses</th><th>K (roundings)</th><th>worst bound usage</th>"
           "<th>worst case (gradient, its K)</th></tr>"]
    for fi, op, rs in groups:
        other = {}
        for r in rs:
            st = r.get("status", "")
            if st != "Pass":
                other[st] = other.get(st, 0) + 1
        ks = [g.get("bound_K") for r in rs for g in r.get("grads", [])
              if isinstance(g.get("bound_K"), (int, float))]
        worst = None
        for r in rs:
            u, k, name = worst_grad(r)
            if u is not None and (worst is None or u > worst[0]):
                worst = (u, k, name, r.get("case", ""), r.get("backend", ""))
        passes = sum(1 for r in rs if r.get("status") == "Pass")
        if worst is None:
            wu, wc, cls = "&ndash;", "no error measured", ""
        else:
            u, k, name, case, be = worst
            wu = "0 (exact)" if u == 0 else "%.3g" % u
            cls = " class='over'" if u > 1 else (" class='near'" if u >= 0.5 else "")
            wc = "<code>%s</code> %s (%s, K=%s)" % (
                html.escape(case), html.escape(be), html.escape(name),
                "?" if k is None else "%g" % k)
        out.append("<tr><td class='l'>%s</td><td class='l'><code>%s</code></td><td>%d</td>"
                   "<td>%d</td><td class='l'>%s</td><td>%s</td><td%s>%s</td><td class='l'>%s</td></tr>"
                   % (html.escape(FAMILIES[fi][0]), html.escape(op), len(rs), passes,
                      html.escape(", ".join("%s %d" % kv for kv in sorted(other.items())))
                      or "&ndash;",
                      ("%g&ndash;%g" % (min(ks), max(ks)) if min(ks) != max(ks) else "%g" % ks[0])
                      if ks else "&ndash;", cls, wu, wc))
    out.append("</table>")
    return "\n".join(out)


def train_section(d):
    """The loss chart and each model's run summary (vkgrad train), if run."""
    models = [m for m in ("llama", "mamba1", "mamba2")
              if os.path.exists(os.path.join(d, "train_%s.csv" % m))]
    if not models:
        return '<p class="note">(no training run recorded)</p>'
    out = []
    if os.path.exists(os.path.join(d, "train_loss.svg")):
        out.append('<a href="train_loss.svg"><img src="train_loss.png" alt="loss curves"></a>')
    out.append('<p class="note">Raw data: %s.</p>' % ", ".join(
        '<a href="train_%s.csv">train_%s.csv</a>' % (m, m) for m in models))
    for m in models:
        txt = read_text(d, "train_%s.txt" % m, "(not recorded)").splitlines()
        head = [l for l in txt if not l.startswith("step ")][:3]
        tail = [l for l in txt if l.startswith(("done:", "step time", "step split"))]
        out.append("<pre>%s</pre>" % html.escape("\n".join(head + tail)))
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
        "COMPARE_TXT": html.escape(read_text(
            d, "compare.txt", "(no committed baseline for this device)")[-6000:]),
        "CONFORM_COUNTS": conform_counts(read_conform(d)),
        "OP_TABLE": op_table(read_conform(d)),
        "PERF_TABLE": perf_table(rows),
        "PIPELINE_TABLE": pipeline_table(d),
        "STAGES_TABLE": stages_table(d),
        "TRAIN": train_section(d),
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

#!/usr/bin/env python3
"""conformance/tests/check_dump.py — recheck a conformance run outside vkgrad.

Runs `vkgrad conform` on a few cases of every family with --json, --junit and
--dump, then, using only numpy and the standard library:
  - parses the JUnit file as XML and checks its counts against the JSON;
  - loads every .npy of every dumped case (inputs, got, ref, tol);
  - recomputes bound usage, max rel vs RMS, NMSE, max ULP, non-finite and
    over-bound counts from got/ref/tol and checks them against the JSON record;
  - recomputes one op from the dumped inputs in numpy (out_prod, whose
    transposed-src1 form is the dense layer's dx) and checks it against ref.
Usage: check_dump.py path/to/vkgrad [workdir]. Exit 0 when all agree.
"""
import json
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

try:
    import numpy as np
except ImportError:
    print("numpy not available: skipping the dump check")
    sys.exit(77)

CASES = ",".join([
    "out_prod.transposed.m=17.n=5.k=33.a2=2.b2=4",
    "sum_rows.strided.ne0=7.ne1=5.ne2=3",
    "cross_entropy_loss_back.contig.nc=37.rows=9.onehot=0",
    "ssm_conv_back.strided.d_conv=3.d_inner=33.n_t=17.n_s=2",
    "ssm_scan_back.mamba2.d_state=16.head_dim=4.n_head=4.n_group=2.n_tok=7.n_seqs=2.n_slots=3",
    "ssm_scan_back.mamba1.d_state=16.head_dim=1.n_head=8.n_group=1.n_tok=5.n_seqs=1.n_slots=0",
    "train_dense.n_in=9.n_out=5.batch=3",
    "train_scan.mamba2.d_state=8.head_dim=3.n_head=4.n_group=2.n_tok=6.n_seqs=2.n_slots=0",
])


def ordered(f32):
    i = f32.view(np.int32).astype(np.int64)
    return np.where(i < 0, -(i & 0x7FFFFFFF), i)


def metrics(got, ref, tol):
    g = got.astype(np.float64).ravel()
    r = ref.ravel()
    t = tol.ravel()
    nonfinite = int(np.sum(~np.isfinite(g) & np.isfinite(r)))
    err = np.where(np.isfinite(g), np.abs(g - r), np.inf)
    with np.errstate(divide="ignore", invalid="ignore"):
        usage = np.where(err == 0, 0.0, np.where(t > 0, err / t, np.inf))
    rms = np.sqrt(np.sum(r * r) / r.size)
    gf, rf = got.ravel(), r.astype(np.float32)
    ulp = np.where(gf == rf, 0, np.abs(ordered(gf) - ordered(rf)))
    ulp = np.where(np.isnan(gf) | np.isnan(rf), np.inf, ulp)
    return {
        "bound_usage": float(usage.max()),
        "n_over": int(np.sum(err > t)),
        "max_rel_rms": float(err.max() / rms) if rms > 0 else (0.0 if err.max() == 0 else np.inf),
        "nmse": float(np.sum(err * err) / np.sum(r * r)) if np.sum(r * r) > 0 else 0.0,
        "max_ulp": float(ulp.max()),
        "n_nonfinite": nonfinite,
    }


def close(a, b):
    if a is None or b is None:
        return a is None and b is None or (a is None and not np.isfinite(b)) or (b is None and not np.isfinite(a))
    return abs(a - b) <= 1e-9 * max(abs(a), abs(b)) + 1e-300


def main():
    prog = sys.argv[1]
    work = sys.argv[2] if len(sys.argv) > 2 else tempfile.mkdtemp(prefix="vkgrad_dump_")
    jpath, xpath, dump = (os.path.join(work, n) for n in ("run.jsonl", "run.xml", "dump"))
    rc = subprocess.call([prog, "conform", "--include", CASES, "--json", jpath, "--junit", xpath,
                          "--dump", dump, "--quiet"])
    if rc not in (0, 1):
        print(f"vkgrad conform exited {rc}")
        return 1
    lines = [json.loads(line) for line in open(jpath)]
    # the file opens with a header record and closes with a trailer
    frame = [r for r in lines if r.get("schema") == "vkgrad-conform-run"]
    if [r.get("record") for r in frame] != ["header", "trailer"] or lines[0] is not frame[0] \
            or lines[-1] is not frame[1] or not frame[1].get("complete"):
        print("the results file lacks its header and complete trailer records")
        return 1
    records = lines[1:-1]
    bad = 0
    # JUnit parses and agrees with the JSON
    root = ET.parse(xpath).getroot()
    assert root.tag == "testsuites", root.tag
    n_cases = sum(int(s.get("tests")) for s in root.findall("testsuite"))
    if n_cases != len(records):
        print(f"junit has {n_cases} testcases, json {len(records)} records")
        bad += 1
    checked = 0
    for rec in records:
        base = os.path.join(dump, rec["case"], rec["backend"])
        man = json.load(open(os.path.join(base, "manifest.json")))
        files = {(f["role"], f["name"]): f for f in man["files"]}
        for f in man["files"]:  # every file loads, with the manifest's shape
            a = np.load(os.path.join(base, f["file"]))
            if list(a.shape) != f["shape"]:
                print(f"{base}/{f['file']}: shape {a.shape} != manifest {f['shape']}")
                bad += 1
        for g in rec["grads"]:
            got = np.load(os.path.join(base, files[("got", g["name"])]["file"]))
            ref = np.load(os.path.join(base, files[("ref", g["name"])]["file"]))
            tol = np.load(os.path.join(base, files[("tol", g["name"])]["file"]))
            m = metrics(got, ref, tol)
            for k, v in m.items():
                if not close(v, g[k]):
                    print(f"{rec['case']} {rec['backend']} {g['name']}: {k} recomputed {v}, json {g[k]}")
                    bad += 1
            checked += 1
        if rec["case"].startswith("out_prod."):  # the op itself, in numpy
            a = np.load(os.path.join(base, "input_a.npy")).astype(np.float64)  # (a2, k, m)
            b = np.load(os.path.join(base, "input_b.npy")).astype(np.float64)  # (b2, k, n)
            ref = np.load(os.path.join(base, "ref_out.npy"))                   # (b2, n, m)
            r = b.shape[0] // a.shape[0]
            mine = np.stack([b[i].T @ a[i // r] for i in range(b.shape[0])])
            if not np.allclose(mine, ref, rtol=1e-12, atol=1e-12):
                print(f"{rec['case']}: numpy out_prod differs from the dumped reference")
                bad += 1
    print(f"{len(records)} records, {checked} outputs rechecked from .npy, {bad} disagreements")
    return 1 if bad or checked == 0 else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env bash
# conformance/tests/check_deqp_round_trip.sh — deqp-runner's files, out and
# back: `vkgrad conform --deqp-out` writes results.csv and failures.csv that
# agree with the run's own JSON records; failures.csv read back as
# --deqp-baseline makes those failures expected (and a fixed one an
# UnexpectedPass); --flakes and --skips lists in deqp-runner's format mark
# flakes and leave cases out; --fraction partitions the selection.
#
#   check_deqp_round_trip.sh VKGRAD
set -uo pipefail
vkgrad=${1:?usage: check_deqp_round_trip.sh VKGRAD}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
ok() { echo "ok    $1"; }
bad() { echo "FAIL  $1"; fails=$((fails + 1)); }
quick=(conform --quiet --no-determinism --time-reps 0 --reruns 0 --include 'add.*,sum_rows.*')
broken='sum_rows.contig.ne0=7.ne1=5.ne2=3'
fault="perturb:$broken:out:5"

# 1. Out: one run with a known failure, as JSON and as deqp-runner's files.
VKG_FAULT=$fault "$vkgrad" "${quick[@]}" --json "$tmp/run.jsonl" --deqp-out "$tmp/out"
[ $? = 1 ] && ok "conform with a failure exits 1" || bad "conform with a failure did not exit 1"
# every record of the JSON file is a line of results.csv with the status it maps to
python3 - "$tmp/run.jsonl" "$tmp/out/results.csv" "$tmp/out/failures.csv" <<'PY' || fails=$((fails + 1))
import csv, json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
recs = [r for r in recs if "case" in r and "backend" in r]
to_deqp = {"Pass": "Pass", "QualityWarning": "Warn", "NotSupported": "Skip", "Fail": "Fail",
           "Crash": "Crash", "Timeout": "Timeout", "DeviceLost": "Crash"}
want = {f'{r["backend"]}.{r["case"]}': to_deqp[r["status"]] for r in recs}
rows = list(csv.reader(open(sys.argv[2])))
got = {row[0]: row[1] for row in rows}
assert all(len(row) == 3 and float(row[2]) >= 0 for row in rows), "TEST,STATUS,DURATION"
assert [row[0] for row in rows] == sorted(got), "results.csv is sorted by test"
assert got == want, f"results.csv disagrees with the JSON records: {set(got.items()) ^ set(want.items())}"
fails = {row[0]: row[1] for row in csv.reader(open(sys.argv[3]))}
assert fails == {k: v for k, v in want.items() if v in ("Fail", "Crash", "Timeout")}, fails
assert len(fails) >= 1, "the injected failure is in failures.csv"
print(f"ok    results.csv: {len(rows)} rows match the JSON records; failures.csv: {len(fails)} rows")
PY

# 2. Back: failures.csv as the baseline.
VKG_FAULT=$fault "$vkgrad" "${quick[@]}" --deqp-out "$tmp/again" --deqp-baseline "$tmp/out/failures.csv"
[ $? = 0 ] && ok "the same failure against its failures.csv: exit 0" || bad "a baselined failure still failed the run"
grep -q "^Vulkan0.$broken,ExpectedFail,\|^CPU.$broken,ExpectedFail," "$tmp/again/results.csv" &&
  ok "results.csv says ExpectedFail" || bad "no ExpectedFail in results.csv"
cmp -s "$tmp/out/failures.csv" "$tmp/again/failures.csv" && ok "failures.csv is the same baseline again" ||
  bad "failures.csv changed between two runs of the same failure"
"$vkgrad" "${quick[@]}" --deqp-out "$tmp/fixed" --deqp-baseline "$tmp/out/failures.csv" 2>"$tmp/err"
[ $? = 1 ] && grep -q UnexpectedPass "$tmp/err" && ok "a fixed failure is an UnexpectedPass (exit 1)" ||
  bad "a fixed baseline failure did not fail the run"
[ -s "$tmp/fixed/failures.csv" ] && bad "failures.csv not empty after the fix" || ok "failures.csv empty after the fix"
VKG_FAULT="crash:$broken" "$vkgrad" "${quick[@]}" --deqp-baseline "$tmp/out/failures.csv"
[ $? = 1 ] && ok "a Fail that became a Crash is not covered by the baseline" || bad "Fail -> Crash passed"

# 3. Flakes and skips lists.
printf '# deqp-runner flakes list\n\n%s\n' "${broken//./\\.}\$" >"$tmp/flakes.txt"
printf '# deqp-runner skips list\n^CPU\\.add\\.\n' >"$tmp/skips.txt"
VKG_FAULT=$fault "$vkgrad" "${quick[@]}" --deqp-out "$tmp/fl" --json "$tmp/fl.jsonl" \
  --flakes "$tmp/flakes.txt" --skips "$tmp/skips.txt"
[ $? = 0 ] && ok "a listed flake does not fail the run" || bad "a listed flake failed the run"
grep -q ",Flake," "$tmp/fl/results.csv" && ok "results.csv says Flake" || bad "no Flake in results.csv"
n_skip=$(grep -c '^CPU\.add\..*,Skip,' "$tmp/fl/results.csv")
n_add=$(grep -c '^Vulkan0\.add\.\|^CPU\.add\.' "$tmp/out/results.csv")
[ "$n_skip" -gt 0 ] && ! grep -q '^CPU\.add\..*,Pass,' "$tmp/fl/results.csv" &&
  ok "every CPU add case skipped ($n_skip)" || bad "the skips list did not skip CPU add cases"
grep -q '"status":"NotSupported".*skipped: matches --skips' "$tmp/fl.jsonl" &&
  ok "a skipped case's JSON record names the pattern" || bad "skipped records do not say why"
printf 'Vulkan0.add,Passed\n' >"$tmp/badbase.csv"
"$vkgrad" "${quick[@]}" --deqp-baseline "$tmp/badbase.csv" 2>"$tmp/err"
[ $? = 2 ] && grep -q "badbase.csv:1" "$tmp/err" && ok "an unknown status in a baseline: exit 2, line named" ||
  bad "a malformed baseline was accepted"
printf 'ok\n(unclosed\n' >"$tmp/badre.txt"
"$vkgrad" "${quick[@]}" --skips "$tmp/badre.txt" 2>"$tmp/err"
[ $? = 2 ] && grep -q "badre.txt:2" "$tmp/err" && ok "a bad regex in a skips list: exit 2, line named" ||
  bad "a bad skips pattern was accepted"

# 4. --fraction: starts 1..3 of --fraction 3 partition the selection; with --shard.
"$vkgrad" conform --list --include 'add.*,sum_rows.*' >"$tmp/all.txt"
for s in 1 2 3; do "$vkgrad" conform --list --include 'add.*,sum_rows.*' --fraction 3 --fraction-start $s; done |
  sort >"$tmp/parts.txt"
sort "$tmp/all.txt" | cmp -s - "$tmp/parts.txt" && ok "--fraction 3 starts 1..3 partition the cases" ||
  bad "--fraction parts do not partition the selection"
n_frac=$("$vkgrad" conform --list --include 'add.*,sum_rows.*' --fraction 3 | wc -l)
n_both=$(for i in 0 1; do "$vkgrad" conform --list --include 'add.*,sum_rows.*' --fraction 3 --shard $i/2; done | sort -u | wc -l)
[ "$n_frac" = "$n_both" ] && ok "--shard splits a --fraction ($n_frac cases)" || bad "--shard over --fraction lost cases"
"$vkgrad" conform --list --fraction 2 --fraction-start 3 >/dev/null 2>&1
[ $? = 2 ] && ok "--fraction-start past --fraction is refused" || bad "--fraction-start 3 of 2 accepted"

[ "$fails" = 0 ] || { echo "$fails check(s) failed"; exit 1; }

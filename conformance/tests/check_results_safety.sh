#!/usr/bin/env bash
# conformance/tests/check_results_safety.sh — nothing lost, nothing passed
# silently: the `vkgrad conform` / `vkgrad compare` behaviours that keep a
# broken or partial run from reading as a pass, each from a reproduction.
#
#   check_results_safety.sh VKGRAD
set -uo pipefail
vkgrad=${1:?usage: check_results_safety.sh VKGRAD}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
check() { # label, expected exit status, command...
  local label=$1 want=$2
  shift 2
  "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  if [ "$rc" = "$want" ]; then
    echo "ok    $label"
  else
    echo "FAIL  $label: exit $rc, expected $want"
    tail -n 5 "$tmp/err" "$tmp/out"
    fails=$((fails + 1))
  fi
}
quick=(conform --quiet --no-determinism --time-reps 0 --reruns 0)
sel='add.*,sum_rows.*'

# A good run to compare against: CPU and every Vulkan device.
"$vkgrad" "${quick[@]}" --include "$sel" --json "$tmp/good.jsonl" || { echo "FAIL  the reference run"; exit 1; }
n=$(wc -l <"$tmp/good.jsonl")

# 1. A run that lost records or a backend is a regression. A file cut short
#    is refused outright (its trailer is missing: section 6); read anyway,
#    its missing records regress.
head -n $((n / 2)) "$tmp/good.jsonl" >"$tmp/half.jsonl"
check "compare: half the records missing is refused" 2 "$vkgrad" compare --quiet "$tmp/good.jsonl" "$tmp/half.jsonl"
check "compare: half the records missing is a regression" 1 "$vkgrad" compare --quiet --allow-incomplete "$tmp/good.jsonl" "$tmp/half.jsonl"
check "compare: --allow-missing accepts a partial run" 0 "$vkgrad" compare --quiet --allow-incomplete --allow-missing "$tmp/good.jsonl" "$tmp/half.jsonl"
if grep -q '"backend":"Vulkan' "$tmp/good.jsonl"; then
  grep -v '"backend":"Vulkan' "$tmp/good.jsonl" >"$tmp/cpuonly.jsonl"
  check "compare: records of a vanished Vulkan device are refused" 2 "$vkgrad" compare --quiet "$tmp/good.jsonl" "$tmp/cpuonly.jsonl"
  check "compare: a vanished Vulkan device is a regression" 1 "$vkgrad" compare --quiet --allow-incomplete "$tmp/good.jsonl" "$tmp/cpuonly.jsonl"
  VKGRAD_REQUIRE_VULKAN=0 VK_ICD_FILENAMES=/nonexistent.json "$vkgrad" "${quick[@]}" --include "$sel" --json "$tmp/cpu.jsonl" 2>"$tmp/err"
  if grep -q "no Vulkan device" "$tmp/err"; then echo "ok    conform --quiet says when there is no Vulkan device"
  else echo "FAIL  conform --quiet was silent without a Vulkan device"; fails=$((fails + 1)); fi
  check "compare: a run without its Vulkan device is a regression" 1 "$vkgrad" compare --quiet "$tmp/good.jsonl" "$tmp/cpu.jsonl"
fi

# 2. Empty selections are errors, not "everything" or "nothing, passed".
check "conform --include '' is an error" 2 "$vkgrad" "${quick[@]}" --include ''
check "conform --include ',' is an error" 2 "$vkgrad" "${quick[@]}" --include ','
check "conform --exclude '' is an error" 2 "$vkgrad" "${quick[@]}" --exclude ''
: >"$tmp/empty.txt"
check "conform: an empty --case-list is an error" 2 "$vkgrad" "${quick[@]}" --case-list "$tmp/empty.txt"
check "conform: a directory as --case-list is an error" 2 "$vkgrad" "${quick[@]}" --case-list "$tmp"
check "conform: a directory as --expectations is an error" 2 "$vkgrad" "${quick[@]}" --include "$sel" --expectations "$tmp"
check "compare: a directory as baseline is an error" 2 "$vkgrad" compare "$tmp" "$tmp/good.jsonl"

# 3. Output paths are tried before the run; a failed write leaves the old file.
start=$(date +%s)
check "conform: an unwritable --json path fails before the run" 2 "$vkgrad" conform --json /nonexistent-dir/r.jsonl
check "conform: an unwritable --junit path fails before the run" 2 "$vkgrad" conform --junit /nonexistent-dir/r.xml
check "conform: an unwritable --dump path fails before the run" 2 "$vkgrad" conform --dump /proc/vkgrad-dump
[ $(($(date +%s) - start)) -lt 30 ] || { echo "FAIL  the path checks ran cases first"; fails=$((fails + 1)); }
cp "$tmp/good.jsonl" "$tmp/keep.jsonl"
ln -s /dev/full "$tmp/keep.jsonl.tmp"
check "conform: a full disk is an error" 2 "$vkgrad" "${quick[@]}" --include "$sel" --json "$tmp/keep.jsonl"
if cmp -s "$tmp/good.jsonl" "$tmp/keep.jsonl"; then echo "ok    a full disk leaves the previous results file intact"
else echo "FAIL  a full disk damaged the previous results file"; fails=$((fails + 1)); fi

# 4. --json - gives JSON only on standard output, even without --quiet.
"$vkgrad" conform --no-determinism --time-reps 0 --include 'add.*' --json - >"$tmp/stdout.jsonl" 2>/dev/null
if python3 -c 'import json,sys; [json.loads(l) for l in open(sys.argv[1])]' "$tmp/stdout.jsonl" 2>/dev/null &&
   [ -s "$tmp/stdout.jsonl" ]; then echo "ok    --json - writes JSON Lines only"
else echo "FAIL  --json - mixed other text into the JSON"; fails=$((fails + 1)); fi

# 5. Readers: a long comment's tail never becomes an expectation; globs are
#    not cut silently; loading is linear in the records (quadratic loading
#    took minutes at 100,000): checked as a ratio of two loads in one run,
#    never against a wall-clock bound.
sed '0,/"status":"Pass"/s//"status":"Fail"/' "$tmp/good.jsonl" >"$tmp/onefail.jsonl"
{ printf '# %*s' 2045 '' | tr ' ' x; echo ' Fail * * * the tail of a long comment'; } >"$tmp/exp.txt"
check "compare: the tail of a long comment is not an expectation" 1 "$vkgrad" compare --quiet --expectations "$tmp/exp.txt" "$tmp/good.jsonl" "$tmp/onefail.jsonl"
{ printf 'Fail * * %*s reason\n' 300 '' | tr ' ' '*'; } >"$tmp/longglob.txt"
check "compare: an over-long glob is refused, not cut" 2 "$vkgrad" compare --expectations "$tmp/longglob.txt" "$tmp/good.jsonl" "$tmp/good.jsonl"
check "conform: an over-long VKG_FAULT glob is refused, not cut" 2 env VKG_FAULT="crash:$(printf '%*s' 300 '' | tr ' ' x)" "$vkgrad" "${quick[@]}" --include "$sel"
python3 - "$tmp/good.jsonl" "$tmp" <<'PY'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
recs = [r for r in recs if r["schema"] == "vkgrad-conform"]
for n in (10000, 100000):
    with open("%s/big%d.jsonl" % (sys.argv[2], n), "w") as f:
        for i in range(n):
            r = dict(recs[i % len(recs)])
            r["case"] = "%s.copy=%d" % (r["case"], i)
            f.write(json.dumps(r, separators=(",", ":")) + "\n")
PY
# Linear loading takes about 10x as long for 10x the records, quadratic 100x;
# both are timed in the same run, so a slow or loaded machine shifts both.
load_ms() {
    local start=$(date +%s%N)
    check "compare: a $1-record baseline loads" 0 "$vkgrad" compare --quiet --allow-missing --allow-incomplete "$tmp/big$1.jsonl" "$tmp/good.jsonl"
    echo $((($(date +%s%N) - start) / 1000000)) >"$tmp/ms$1"
}
load_ms 10000
load_ms 100000
ms1=$(cat "$tmp/ms10000") ms10=$(cat "$tmp/ms100000")
if [ "$ms10" -lt $((30 * ms1 + 1000)) ]; then
    echo "ok    10x the baseline records took $ms10 ms against $ms1 ms: loading is linear"
else echo "FAIL  10x the baseline records took $ms10 ms against $ms1 ms: loading is not linear"; fails=$((fails + 1)); fi

# 6. A file cut at a record boundary, or left by a signal, is refused as
#    incomplete; a signal kills the workers and keeps the partial records.
head -n $((n / 2)) "$tmp/good.jsonl" >"$tmp/cut.jsonl"
check "compare: a file cut at a record boundary is refused" 2 "$vkgrad" compare --quiet "$tmp/good.jsonl" "$tmp/cut.jsonl"
check "compare: --allow-incomplete reads it (its missing records regress)" 1 "$vkgrad" compare --quiet --allow-incomplete "$tmp/good.jsonl" "$tmp/cut.jsonl"
for sig in TERM INT KILL; do
  cp "$tmp/good.jsonl" "$tmp/sig.jsonl"
  rm -f "$tmp/sig.jsonl.partial"
  "$vkgrad" conform --quiet --no-determinism --time-reps 0 --json "$tmp/sig.jsonl" 2>/dev/null &
  pid=$!
  for _ in $(seq 600); do # until a record is in (header + 1 line)
    [ "$({ wc -l <"$tmp/sig.jsonl.partial"; } 2>/dev/null || echo 0)" -ge 2 ] && break
    sleep 0.1
  done
  workers=$(pgrep -P "$pid" | tr '\n' ' ')
  kill -"$sig" "$pid"
  wait "$pid" 2>/dev/null
  rc=$?
  sleep 1
  alive=""
  for w in $workers; do # a zombie waiting for its reaper is dead
    st=$(ps -o stat= -p "$w" 2>/dev/null)
    [ -n "$st" ] && [ "${st#Z}" = "$st" ] && alive="$alive $w"
  done
  [ -z "$alive" ] || { echo "FAIL  SIG$sig: workers$alive outlived conform"; kill -9 $alive; fails=$((fails + 1)); }
  [ -n "$workers" ] && [ -z "$alive" ] && echo "ok    SIG$sig: no worker outlives conform"
  cmp -s "$tmp/good.jsonl" "$tmp/sig.jsonl" || { echo "FAIL  SIG$sig: the previous results file changed"; fails=$((fails + 1)); }
  [ "$sig" = KILL ] && continue
  want=$([ "$sig" = INT ] && echo 130 || echo 143)
  if [ "$rc" = "$want" ] && tail -1 "$tmp/sig.jsonl.partial" | grep -q '"complete":false'; then
    echo "ok    SIG$sig: exit $rc, partial records kept and marked incomplete"
  else
    echo "FAIL  SIG$sig: exit $rc, partial file: $(tail -c 200 "$tmp/sig.jsonl.partial" 2>/dev/null)"
    fails=$((fails + 1))
  fi
  check "compare: SIG$sig's partial file is refused" 2 "$vkgrad" compare --quiet "$tmp/good.jsonl" "$tmp/sig.jsonl.partial"
done

[ $fails -eq 0 ] || { echo "$fails check(s) failed" >&2; exit 1; }

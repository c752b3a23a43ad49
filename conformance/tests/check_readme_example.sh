#!/usr/bin/env bash
# check_readme_example.sh README.md example.c — the README's C example must be
# the example file (less its two-line header comment), so the code the test
# suite builds and runs is the code the README shows.
set -eu
readme=$1 example=$2
want=$(tail -n +3 "$example")
got=$(awk '/^## The library in C/ {sect=1} sect && /^```c$/ {on=1; next} on && /^```$/ {exit} on {print}' "$readme")
if [ "$want" != "$got" ]; then
  echo "README.md's C example differs from $example:" >&2
  diff <(printf '%s\n' "$want") <(printf '%s\n' "$got") >&2 || true
  exit 1
fi
echo "README example matches $example"

#!/usr/bin/env bash
# ci/check_install.sh — vkgrad as a dependency, the way another project takes it:
#   1. installed (meson install into a temporary root), then the README's
#      dense-layer example built outside the tree with `pkg-config --cflags
#      --libs vkgrad` against the shared library, and run;
#   2. taken as a meson subproject (dependency('vkgrad') with a fallback) by a
#      project of its own, built and run.
#
#   ci/check_install.sh [BUILD_DIR]     default build/ (configured and built)
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
bdir=${1:-build}
[ -f "$bdir/build.ninja" ] || { echo "check_install: $bdir is not a configured build" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
example=conformance/tests/example_dense_layer.c

echo "check_install: meson install into a temporary root"
meson install -C "$bdir" --destdir "$tmp/root" >"$tmp/install.log" 2>&1 ||
  { tail -20 "$tmp/install.log" >&2; exit 1; }
pc=$(find "$tmp/root" -name vkgrad.pc | head -n 1)
[ -n "$pc" ] || { echo "check_install: no vkgrad.pc installed" >&2; exit 1; }
for h in vkgrad.h backend.h context.h graph.h ops.h sched.h tensor.h vulkan.h; do
  [ -n "$(find "$tmp/root" -path "*/include/vkgrad/$h")" ] ||
    { echo "check_install: header vkgrad/$h not installed" >&2; exit 1; }
done
so=$(find "$tmp/root" -name 'libvkgrad.so.*' -type f | head -n 1)
[ -n "$so" ] || { echo "check_install: no shared library installed" >&2; exit 1; }
soname=$(objdump -p "$so" | awk '/SONAME/ {print $2}')
echo "check_install: installed $(basename "$so") (soname $soname), $(basename "$pc")"
export PKG_CONFIG_PATH=$(dirname "$pc") PKG_CONFIG_SYSROOT_DIR=$tmp/root
flags=$(pkg-config --cflags --libs vkgrad)
cc -std=c11 -o "$tmp/dense_pkgconfig" "$example" $flags
echo "check_install: built with: cc -std=c11 example.c $(pkg-config --cflags --libs vkgrad | sed "s#$tmp/root##g")"
LD_LIBRARY_PATH=$(dirname "$so") "$tmp/dense_pkgconfig" >"$tmp/run1.log" 2>&1 ||
  { cat "$tmp/run1.log" >&2; echo "check_install: the pkg-config build failed to run" >&2; exit 1; }
ldd "$tmp/dense_pkgconfig" | grep -q "$soname" ||
  { echo "check_install: the example does not use the shared library" >&2; exit 1; }
echo "check_install: the pkg-config build runs: $(tail -n 1 "$tmp/run1.log")"
unset PKG_CONFIG_PATH PKG_CONFIG_SYSROOT_DIR

echo "check_install: vkgrad as a meson subproject"
mkdir -p "$tmp/consumer/subprojects"
ln -s "$repo" "$tmp/consumer/subprojects/vkgrad"
cp "$example" "$tmp/consumer/dense.c"
cat >"$tmp/consumer/meson.build" <<'MESON'
project('consumer', 'c', default_options: ['c_std=c11'])
vkgrad = dependency('vkgrad', fallback: ['vkgrad', 'vkgrad_dep'])
executable('dense', 'dense.c', dependencies: vkgrad)
MESON
(cd "$tmp/consumer" && meson setup build >"$tmp/sub.log" 2>&1 && meson compile -C build >>"$tmp/sub.log" 2>&1) ||
  { tail -30 "$tmp/sub.log" >&2; echo "check_install: the subproject build failed" >&2; exit 1; }
"$tmp/consumer/build/dense" >"$tmp/run2.log" 2>&1 ||
  { cat "$tmp/run2.log" >&2; echo "check_install: the subproject build failed to run" >&2; exit 1; }
echo "check_install: the subproject build runs: $(tail -n 1 "$tmp/run2.log")"

#!/usr/bin/env bash
# Fetches Debian bookworm-backports' Mesa Vulkan drivers (mesa-vulkan-drivers)
# into a cache folder without installing them, and prints the path of an ICD
# manifest for its lavapipe whose library_path is absolute, for
# `vkgrad devices|demo|conform|perf --icd FILE`.
#
# Nothing on the system changes: apt runs with its own sources list, package
# lists and archive folder inside the cache (the system's keyring checks the
# signatures), the package is downloaded, not installed, and unpacked with
# dpkg -x. The manifest that comes with the package names its library bare
# ("libvulkan_lvp.so"), which the loader would look up in the system's
# library path and so find the installed driver; the one written here names
# the unpacked file.
#
# usage: ci/fetch-mesa-backports.sh [--cache DIR] [--version VERSION] [--mirror URL]
#   --cache DIR      where to keep it (default ${XDG_CACHE_HOME:-~/.cache}/vkgrad/mesa-backports)
#   --version V      that exact package version (default: the newest in backports)
#   --mirror URL     the Debian mirror (default http://deb.debian.org/debian)
# Prints the manifest's path on stdout (and nothing else); progress on stderr.
# Needs network, apt-get and dpkg (Debian 12). Exit 1 when a step fails.
set -euo pipefail

cache="${XDG_CACHE_HOME:-$HOME/.cache}/vkgrad/mesa-backports"
version=""
mirror="http://deb.debian.org/debian"
while [ $# -gt 0 ]; do
    case "$1" in
        --cache) cache="$2"; shift 2 ;;
        --version) version="$2"; shift 2 ;;
        --mirror) mirror="$2"; shift 2 ;;
        -h|--help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "fetch-mesa-backports: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done

say() { echo "fetch-mesa-backports: $*" >&2; }
die() { say "$*"; exit 1; }
for tool in apt-get dpkg-deb python3; do
    command -v "$tool" >/dev/null || die "$tool is missing (Debian 12: apt-get install apt dpkg python3)"
done
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
[ -r "$keyring" ] || die "$keyring is missing (apt-get install debian-archive-keyring)"

mkdir -p "$cache"
cache="$(cd "$cache" && pwd)"
apt_dir="$cache/apt"
mkdir -p "$apt_dir/lists/partial" "$apt_dir/archives/partial" "$cache/debs"
echo "deb [signed-by=$keyring] $mirror bookworm-backports main" > "$apt_dir/sources.list"
apt_opts=(-o "Dir::Etc::SourceList=$apt_dir/sources.list" -o "Dir::Etc::SourceParts=$apt_dir/none"
          -o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir"
          -o "Dir::Cache::archives=$apt_dir/archives" -o "Debug::NoLocking=1" -q)
# apt drops to the _apt user to download, which cannot write into a root-owned cache
[ "$(id -u)" = 0 ] && apt_opts+=(-o "APT::Sandbox::User=root")

say "updating the package list of bookworm-backports ($mirror) in $apt_dir"
apt-get "${apt_opts[@]}" update >&2 || die "apt-get update failed"
pkg="mesa-vulkan-drivers/bookworm-backports"
[ -n "$version" ] && pkg="mesa-vulkan-drivers=$version"
(cd "$cache/debs" && apt-get "${apt_opts[@]}" download "$pkg" >&2) || die "apt-get download $pkg failed"
deb="$(ls -t "$cache"/debs/mesa-vulkan-drivers_*.deb | head -n 1)"
[ -n "$version" ] || version="$(dpkg-deb -f "$deb" Version)"
deb="$(ls "$cache"/debs/mesa-vulkan-drivers_"${version/:/%3a}"_*.deb 2>/dev/null | head -n 1)"
[ -n "$deb" ] || die "no package file for version $version in $cache/debs"

root="$cache/mesa-vulkan-drivers-$version"
if [ ! -d "$root" ]; then
    say "unpacking $(basename "$deb") into $root (dpkg -x: not installed)"
    rm -rf "$root.tmp"
    dpkg -x "$deb" "$root.tmp"
    mv "$root.tmp" "$root"
fi
lib="$(find "$root" -name libvulkan_lvp.so -type f | head -n 1)"
manifest="$(find "$root/usr/share/vulkan/icd.d" -name 'lvp_icd*.json' | head -n 1)"
[ -n "$lib" ] && [ -n "$manifest" ] || die "no lavapipe (libvulkan_lvp.so, lvp_icd*.json) in $deb"
if command -v ldd >/dev/null && ldd "$lib" | grep -q 'not found'; then
    die "$lib needs libraries this machine lacks: $(ldd "$lib" | grep 'not found' | tr -s ' \t' ' ')"
fi

out="$cache/lvp_icd-$version.json"
python3 - "$manifest" "$lib" "$out" <<'EOF'
import json, sys
manifest, lib, out = sys.argv[1:]
with open(manifest) as f:
    m = json.load(f)
m["ICD"]["library_path"] = lib
with open(out + ".tmp", "w") as f:
    json.dump(m, f, indent=4)
    f.write("\n")
EOF
mv "$out.tmp" "$out"
say "mesa-vulkan-drivers $version: lavapipe $lib"
echo "$out"

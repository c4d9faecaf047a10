#!/usr/bin/env bash
# Fetch and unpack a real llama.cpp server for plload's real-server test tier, installing nothing:
# Debian unstable's llama.cpp-tools with the libraries it needs (that suite's libc among them) are
# downloaded with apt-get under a private apt state and unpacked with dpkg-deb into one folder. The
# Go package llamaserver runs llama-server from there through the folder's own loader.
#
#   .ci/llama-server.sh            # unpack into ${XDG_CACHE_HOME:-~/.cache}/plload/llama.cpp/root
#   PLLOAD_REAL_SERVER=require go test -p 1 ./llamaserver ./cli -run RealServer -v   # the tier
#
# Needs apt-get and dpkg-deb (Debian or Ubuntu) and network access to deb.debian.org. Run again, it
# does nothing when the tree is complete.
set -euo pipefail
base="${PLLOAD_LLAMA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/plload/llama.cpp}"
root="$base/root"
packages="llama.cpp-tools libllama0 libggml0 libc6 libstdc++6 libgcc-s1 libgomp1 libssl3t64 libzstd1 zlib1g"
if [ -x "$root/usr/bin/llama-server" ] && [ -e "$root/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2" ] && [ -f "$base/.complete" ]; then
  echo "llama-server already unpacked at $root; the tier: PLLOAD_REAL_SERVER=require go test -p 1 ./llamaserver ./cli -run RealServer -v"; exit 0
fi
if [ "$(uname -m)" != x86_64 ]; then echo "llama-server.sh: only x86_64 is supported (this is $(uname -m))" >&2; exit 1; fi
apt="$base/apt"
mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$base/debs"
echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian unstable main" > "$apt/sources.list"
: > "$apt/status"
opts=(-o Dir::Etc::sourcelist="$apt/sources.list" -o Dir::Etc::sourceparts=/nonexistent
      -o Dir::State::Lists="$apt/lists" -o Dir::Cache="$apt/cache" -o Dir::State::status="$apt/status"
      -o APT::Sandbox::User=root -o Debug::NoLocking=1)
echo "== apt-get update (Debian unstable, private state in $apt)"
timeout 300 apt-get "${opts[@]}" update -qq
echo "== apt-get download $packages"
(cd "$base/debs" && rm -f ./*.deb && timeout 300 apt-get "${opts[@]}" download $packages)
rm -rf "$root.new"; mkdir -p "$root.new"
for deb in "$base"/debs/*.deb; do dpkg-deb -x "$deb" "$root.new"; done
rm -rf "$root"; mv "$root.new" "$root"
lib="$root/usr/lib/x86_64-linux-gnu"
(cd "$lib/ggml/backends0" && "$lib/ld-linux-x86-64.so.2" --library-path "$lib:$lib/llama" "$root/usr/bin/llama-server" --version)
touch "$base/.complete"
echo "llama-server unpacked at $root; the tier: PLLOAD_REAL_SERVER=require go test -p 1 ./llamaserver ./cli -run RealServer -v"

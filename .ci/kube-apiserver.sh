#!/usr/bin/env bash
# kube-apiserver, kubectl and etcd for TestK8sManifestsPassAPIServer (package deploy), which starts
# an API server on loopback and has it validate what `plload k8s` prints (kubectl apply
# --dry-run=server). No node, no containers: only the API server's validation, defaulting and admission.
#
#   .ci/kube-apiserver.sh      # build (once) and install what is missing; prints where things are
#   .ci/kube-apiserver.sh node # also kube-controller-manager, kube-scheduler and kubelet, for the
#                              # one-node cluster of .ci/kube-node.sh
#   PLLOAD_KUBE=require go test -p 1 -run K8sManifestsPassAPIServer -v ./deploy
#
# kube-apiserver and kubectl v1.34.4 are built from k8s.io/kubernetes through a wrapper module in
# $PLLOAD_KUBE_DIR/build (default ~/.cache/plload/k8s): k8s.io/kubernetes replaces its k8s.io/*
# staging modules with ./staging paths, which only its own repository has, so the wrapper replaces
# each with its v0.34.4 release. The binaries go to $PLLOAD_KUBE_DIR/bin (the test's default
# PLLOAD_KUBE_BIN); a second run finds them and builds nothing. The build takes about 6 minutes on 2
# cores with an empty Go build cache. etcd is Debian's etcd-server, installed with apt-get when
# missing (root only). Exits non-zero, saying why, when something cannot be had.
set -euo pipefail
version=1.34.4
staging=v0.${version#1.} # the staging modules' release of the same Kubernetes: v0.34.4
base="${PLLOAD_KUBE_DIR:-$HOME/.cache/plload/k8s}"
bin="$base/bin"
build="$base/build"
fail() { echo "kube-apiserver.sh: $*" >&2; exit 1; }
cmds="kube-apiserver kubectl"
case "${1:-}" in
  "") ;;
  node) cmds="$cmds kube-controller-manager kube-scheduler kubelet" ;;
  *) fail "unknown argument $1 (accepted: none, or node)" ;;
esac

# built: both binaries are there and say they are $version (a leftover of another version is rebuilt).
# Their output is read whole first: under pipefail, grep -q closing the pipe early would fail the check.
built() {
  local c out
  for c in $cmds; do
    [ -x "$bin/$c" ] || return 1
    if [ "$c" = kubectl ]; then
      out=$("$bin/kubectl" version --client 2>/dev/null) || return 1
      grep -qx "Client Version: v$version" <<<"$out" || return 1
    else
      out=$("$bin/$c" --version 2>/dev/null) || return 1
      grep -qx "Kubernetes v$version" <<<"$out" || return 1
    fi
  done
}

if ! built; then
  command -v go >/dev/null || fail "no go on PATH to build kube-apiserver and kubectl"
  echo "== building $cmds v$version in $build (minutes)"
  mkdir -p "$build" "$bin"
  cd "$build"
  # The wrapper module is its own: no workspace, and none of plload's go.mod.
  export GOWORK=off GOFLAGS=-mod=mod
  cat > go.mod <<EOF
module plload.local/k8sbuild

go 1.24.0

require k8s.io/kubernetes v$version
EOF
  # tools.go keeps the commands' packages in the module graph for go mod tidy.
  { printf '//go:build tools\n\npackage tools\n\nimport (\n'
    for c in $cmds; do printf '\t_ "k8s.io/kubernetes/cmd/%s"\n' "$c"; done
    printf ')\n'; } > tools.go
  # Every staging module, read from k8s.io/kubernetes' own go.mod ("k8s.io/x => ./staging/src/k8s.io/x").
  kmod=$(go mod download -json "k8s.io/kubernetes@v$version" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p')
  [ -s "$kmod" ] || fail "could not download k8s.io/kubernetes@v$version (no network to the Go module proxy?)"
  mods=$(sed -n 's#^[[:space:]]*\(k8s\.io/[^[:space:]]*\) => \./staging/src/.*#\1#p' "$kmod")
  [ -n "$mods" ] || fail "k8s.io/kubernetes@v$version's go.mod ($kmod) names no staging module"
  for m in $mods; do go mod edit -replace "$m=$m@$staging"; done
  echo "replaced $(echo "$mods" | wc -w) staging modules with their $staging releases"
  go mod tidy || fail "go mod tidy failed in $build"
  # The version the binaries report (kube-apiserver --version, kubectl version): without it both say v0.0.0.
  minor=${version#1.}
  minor=${minor%%.*}
  ldflags=""
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags="$ldflags -X $p.gitVersion=v$version -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean"
  done
  pkgs=""
  for c in $cmds; do pkgs="$pkgs k8s.io/kubernetes/cmd/$c"; done
  # shellcheck disable=SC2086 # one word per package
  CGO_ENABLED=0 go build -trimpath -ldflags "-s -w $ldflags" -o "$bin/" $pkgs || fail "go build failed in $build"
  built || fail "the built binaries in $bin do not report v$version"
fi

if ! command -v etcd >/dev/null; then
  [ "$(id -u)" = 0 ] || fail "no etcd on PATH, and installing Debian's etcd-server needs root"
  command -v apt-get >/dev/null || fail "no etcd on PATH and no apt-get to install etcd-server"
  echo "== apt-get install etcd-server"
  (timeout 300 apt-get update -qq && DEBIAN_FRONTEND=noninteractive timeout 600 apt-get install -y -qq --no-install-recommends etcd-server) >/dev/null \
    || fail "apt-get could not install etcd-server"
  command -v etcd >/dev/null || fail "etcd-server is installed but no etcd is on PATH"
fi

for c in $cmds; do
  if [ "$c" = kubectl ]; then
    echo "kubectl: $bin/kubectl ($("$bin/kubectl" version --client | head -n 1))"
  else
    echo "$c: $bin/$c ($("$bin/$c" --version))"
  fi
done
echo "etcd: $(command -v etcd) ($(etcd --version | head -n 1))"
echo "the test: PLLOAD_KUBE_BIN=$bin PLLOAD_KUBE=require go test -p 1 -run K8sManifestsPassAPIServer -v ./deploy"

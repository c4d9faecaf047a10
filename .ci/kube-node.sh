#!/usr/bin/env bash
# A real one-node Kubernetes v1.34 on this machine, for trying `plload k8s` end to end: etcd,
# kube-apiserver, kube-controller-manager (the Job, EndpointSlice and PersistentVolume controllers),
# kube-scheduler, a kubelet on containerd with runc and the CNI bridge plugin, and CoreDNS for the
# coordinator's headless Service. Root only; everything lives under $PLLOAD_KUBE_NODE_DIR (default
# /tmp/plload-kube-node) and listens on loopback, but for the pods' bridge (cni0, 10.88.0.0/16).
#
#   .ci/kube-node.sh up     # build what is missing (.ci/kube-apiserver.sh node, CoreDNS), start all,
#                           # wait for the node to be Ready; prints the KUBECONFIG line
#   .ci/kube-node.sh image NAME:TAG BINARY   # load a static binary as a one-file image (ENTRYPOINT it)
#   .ci/kube-node.sh down   # stop everything and remove the pods' network
#
# Images come from nowhere else: the node has no registry. `up` loads the pause image the kubelet
# needs (a static binary that waits for a signal) and busybox:stable from Debian's busybox-static
# (for --results-init). Generate with --image-pull-policy IfNotPresent (or Never).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
kdir="${PLLOAD_KUBE_DIR:-$HOME/.cache/plload/k8s}"
bin="$kdir/bin"
state="${PLLOAD_KUBE_NODE_DIR:-/tmp/plload-kube-node}"
node=$(hostname)
fail() { echo "kube-node.sh: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || fail "needs root (containerd, the kubelet and the pods' network)"

stop() {
  local p
  for p in kubelet kube-scheduler kube-controller-manager coredns kube-apiserver containerd etcd; do
    if [ -f "$state/$p.pid" ]; then kill "$(cat "$state/$p.pid")" 2>/dev/null || true; rm -f "$state/$p.pid"; fi
  done
  sleep 2
  # Pods' processes outlive containerd's shims only when killed hard; their mounts go with the state.
  pkill -f "containerd-shim-runc-v2 -namespace k8s.io" 2>/dev/null || true
  ip link del cni0 2>/dev/null || true
  if [ -d "$state" ]; then
    { grep -o " $state[^ ]*" /proc/mounts || true; } | sort -r | while read -r m; do umount -l "$m" 2>/dev/null || true; done
  fi
}

ctr_() { ctr --address "$state/containerd.sock" -n k8s.io "$@"; }

# image NAME:TAG ENTRYPOINT-PATH FILE...: an OCI image of one layer holding FILEs (source=path-in-image,
# or @path-in-image=target for a symbolic link), imported into the node's containerd.
image() {
  local name=$1 entry=$2; shift 2
  # The name as the kubelet asks for it: plload:dev is docker.io/library/plload:dev.
  case "${name%%/*}" in
    "$name") name="docker.io/library/$name" ;;
    *.*|*:*|localhost) ;;
    *) name="docker.io/$name" ;;
  esac
  local w; w=$(mktemp -d)
  mkdir -p "$w/root/tmp" "$w/oci/blobs/sha256"
  chmod 1777 "$w/root/tmp"
  local f src dst
  for f in "$@"; do
    src=${f%%=*}; dst=${f#*=}
    case "$src" in
      @*) mkdir -p "$w/root/$(dirname "${src#@}")"; ln -s "$dst" "$w/root/${src#@}" ;;
      *) mkdir -p "$w/root/$(dirname "$dst")"; cp -a "$src" "$w/root/$dst" ;;
    esac
  done
  tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -C "$w/root" -cf "$w/layer.tar" .
  local ld lsz cd csz md msz
  ld=$(sha256sum "$w/layer.tar" | cut -d' ' -f1); lsz=$(stat -c %s "$w/layer.tar")
  mv "$w/layer.tar" "$w/oci/blobs/sha256/$ld"
  printf '{"architecture":"amd64","os":"linux","config":{"Entrypoint":["%s"],"Env":["HOME=/tmp","TMPDIR=/tmp","PATH=/bin"]},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' \
    "$entry" "$ld" > "$w/config.json"
  cd=$(sha256sum "$w/config.json" | cut -d' ' -f1); csz=$(stat -c %s "$w/config.json")
  mv "$w/config.json" "$w/oci/blobs/sha256/$cd"
  printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":%s},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":"sha256:%s","size":%s}]}' \
    "$cd" "$csz" "$ld" "$lsz" > "$w/manifest.json"
  md=$(sha256sum "$w/manifest.json" | cut -d' ' -f1); msz=$(stat -c %s "$w/manifest.json")
  mv "$w/manifest.json" "$w/oci/blobs/sha256/$md"
  printf '{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%s,"annotations":{"io.containerd.image.name":"%s","org.opencontainers.image.ref.name":"%s"}}]}' \
    "$md" "$msz" "$name" "${name##*:}" > "$w/oci/index.json"
  echo '{"imageLayoutVersion":"1.0.0"}' > "$w/oci/oci-layout"
  tar -C "$w/oci" -cf "$w/image.tar" .
  ctr_ images import --no-unpack=false "$w/image.tar" >/dev/null || fail "could not import $name"
  rm -rf "$w"
  echo "image $name loaded"
}

# waitfor WHAT SECONDS COMMAND...: runs COMMAND once a second until it succeeds.
waitfor() {
  local what=$1 n=$2; shift 2
  local i
  for ((i = 0; i < n; i++)); do "$@" >/dev/null 2>&1 && return 0; sleep 1; done
  fail "$what did not come up in $n s (logs in $state/*.log)"
}

up() {
  "$here/kube-apiserver.sh" node
  if [ ! -x "$bin/coredns" ]; then
    echo "== building CoreDNS v1.14.7 (minutes)"
    GOWORK=off GOFLAGS= CGO_ENABLED=0 GOBIN="$bin" go install -trimpath -ldflags "-s -w" github.com/coredns/coredns@v1.14.7 \
      || fail "could not build CoreDNS"
  fi
  local missing=""
  for c in containerd runc etcd iptables conntrack; do command -v $c >/dev/null || missing="$missing $c"; done
  [ -x /usr/lib/cni/bridge ] || missing="$missing containernetworking-plugins"
  [ -x /bin/busybox ] || missing="$missing busybox-static"
  if [ -n "$missing" ]; then
    echo "== apt-get install containerd runc containernetworking-plugins etcd-server iptables conntrack busybox-static"
    (timeout 300 apt-get update -qq && DEBIAN_FRONTEND=noninteractive timeout 600 apt-get install -y -qq --no-install-recommends \
      containerd runc containernetworking-plugins etcd-server iptables conntrack busybox-static) >/dev/null || fail "apt-get failed (missing:$missing)"
  fi
  stop
  rm -rf "$state"; mkdir -p "$state"/{pki,cni,etcd,containerd,kubelet,pods}
  cd "$state"
  modprobe overlay 2>/dev/null || true; modprobe br_netfilter 2>/dev/null || true
  sysctl -qw net.ipv4.ip_forward=1
  # The pods' bridge exists before the first pod: the kubelet's node IP and CoreDNS live on it.
  ip link add cni0 type bridge && ip addr add 10.88.0.1/16 dev cni0 && ip link set cni0 up || fail "could not make the bridge cni0"

  # Certificates: one CA signs the API server's; the service-account key signs pods' tokens.
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=plload-kube-ca -keyout pki/ca.key -out pki/ca.crt 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -subj /CN=kube-apiserver -keyout pki/apiserver.key -out pki/apiserver.csr 2>/dev/null
  printf 'subjectAltName=IP:127.0.0.1,IP:10.96.0.1,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,DNS:localhost\n' > pki/san.ext
  openssl x509 -req -in pki/apiserver.csr -CA pki/ca.crt -CAkey pki/ca.key -CAcreateserial -days 2 -extfile pki/san.ext -out pki/apiserver.crt 2>/dev/null
  openssl genrsa -out pki/sa.key 2048 2>/dev/null; openssl rsa -in pki/sa.key -pubout -out pki/sa.pub 2>/dev/null
  local token; token=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
  # Every component is an administrator (group system:masters): one node, one user, a test cluster.
  echo "$token,admin,admin,system:masters" > pki/tokens.csv
  cat > kubeconfig <<EOF
apiVersion: v1
kind: Config
clusters: [{name: local, cluster: {server: "https://127.0.0.1:6443", certificate-authority: $state/pki/ca.crt}}]
users: [{name: admin, user: {token: $token}}]
contexts: [{name: local, context: {cluster: local, user: admin}}]
current-context: local
EOF

  echo "== etcd, kube-apiserver"
  etcd --data-dir etcd --listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 \
    --listen-peer-urls http://127.0.0.1:2380 >etcd.log 2>&1 & echo $! > etcd.pid
  "$bin/kube-apiserver" --etcd-servers http://127.0.0.1:2379 --bind-address 127.0.0.1 --secure-port 6443 \
    --advertise-address 127.0.0.1 --tls-cert-file pki/apiserver.crt --tls-private-key-file pki/apiserver.key \
    --client-ca-file pki/ca.crt --token-auth-file pki/tokens.csv --authorization-mode Node,RBAC \
    --service-cluster-ip-range 10.96.0.0/16 --service-account-issuer https://kubernetes.default.svc \
    --service-account-key-file pki/sa.pub --service-account-signing-key-file pki/sa.key \
    --kubelet-preferred-address-types InternalIP --allow-privileged >kube-apiserver.log 2>&1 & echo $! > kube-apiserver.pid
  waitfor kube-apiserver 90 "$bin/kubectl" --kubeconfig kubeconfig get --raw /readyz

  echo "== kube-controller-manager, kube-scheduler, CoreDNS"
  "$bin/kube-controller-manager" --kubeconfig kubeconfig --leader-elect=false \
    --service-account-private-key-file pki/sa.key --root-ca-file pki/ca.crt --use-service-account-credentials=false \
    --controllers '*,-nodeipam,-cloud-node-lifecycle,-service-lb-controller,-node-route-controller' \
    --bind-address 127.0.0.1 >kube-controller-manager.log 2>&1 & echo $! > kube-controller-manager.pid
  "$bin/kube-scheduler" --kubeconfig kubeconfig --leader-elect=false --bind-address 127.0.0.1 \
    >kube-scheduler.log 2>&1 & echo $! > kube-scheduler.pid
  # CoreDNS runs on the node itself, on the bridge's gateway (the pods' cluster DNS): no kube-proxy is
  # needed for the headless Services plload uses. It binds once the bridge exists (the first pod).
  cat > Corefile <<EOF
.:53 {
    bind 10.88.0.1
    errors
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        kubeconfig $state/kubeconfig local
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
    }
    cache 5
}
EOF

  echo "== containerd, kubelet"
  local capeff restrict_oom=false
  capeff=$(awk '/^CapEff:/ {print $2}' /proc/self/status)
  (( (16#$capeff >> 24) & 1 )) || restrict_oom=true # bit 24: CAP_SYS_RESOURCE
  cat > cni/10-plload.conflist <<EOF
{"cniVersion": "0.4.0", "name": "plload", "plugins": [
  {"type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": true, "hairpinMode": true,
   "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.88.0.0/16", "gateway": "10.88.0.1"}]], "routes": [{"dst": "0.0.0.0/0"}]}},
  {"type": "portmap", "capabilities": {"portMappings": true}}]}
EOF
  cat > containerd.toml <<EOF
version = 2
root = "$state/containerd/root"
state = "$state/containerd/state"
[grpc]
  address = "$state/containerd.sock"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "registry.k8s.io/pause:3.10"
  # Without CAP_SYS_RESOURCE (as in some VMs and containers) no process may lower its oom_score_adj,
  # and runc fails every pod ("can't get final child's PID from pipe") on the kubelet's -998.
  restrict_oom_score_adj = $restrict_oom
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$state/cni"
EOF
  containerd --config containerd.toml >containerd.log 2>&1 & echo $! > containerd.pid
  waitfor containerd 30 ctr_ version
  # The pause container: any process that waits for its signal.
  local w; w=$(mktemp -d)
  cat > "$w/main.go" <<'EOF'
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGINT, syscall.SIGTERM)
	<-c
}
EOF
  (cd "$w" && GOWORK=off go mod init pause >/dev/null 2>&1 && CGO_ENABLED=0 go build -o pause .) || fail "could not build the pause binary"
  image registry.k8s.io/pause:3.10 /pause "$w/pause=pause"
  rm -rf "$w"
  image docker.io/library/busybox:stable /bin/sh /bin/busybox=bin/busybox @bin/sh=busybox @bin/mkdir=busybox @bin/chown=busybox
  cat > kubelet.yaml <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
authentication: {anonymous: {enabled: true}, webhook: {enabled: false}}
authorization: {mode: AlwaysAllow}
cgroupDriver: cgroupfs
failSwapOn: false
failCgroupV1: false
clusterDNS: [10.88.0.1]
clusterDomain: cluster.local
containerRuntimeEndpoint: unix://$state/containerd.sock
address: 10.88.0.1
readOnlyPort: 0
evictionHard: {memory.available: "100Mi", nodefs.available: "1%", imagefs.available: "1%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
EOF
  "$bin/kubelet" --config kubelet.yaml --kubeconfig kubeconfig --root-dir "$state/kubelet" \
    --hostname-override "$node" --node-ip 10.88.0.1 >kubelet.log 2>&1 & echo $! > kubelet.pid
  "$bin/coredns" -conf Corefile >coredns.log 2>&1 & echo $! > coredns.pid
  waitfor "the node $node" 120 sh -c "'$bin/kubectl' --kubeconfig kubeconfig get node '$node' -o jsonpath='{.status.conditions[?(@.type==\"Ready\")].status}' | grep -qx True"
  echo "the node $node is Ready"
  echo "export KUBECONFIG=$state/kubeconfig PATH=$bin:\$PATH"
}

case "${1:-}" in
  up) up ;;
  down) stop; echo "stopped" ;;
  image) [ $# -eq 3 ] || fail "usage: image NAME:TAG BINARY"; image "$2" "/$(basename "$3")" "$3=$(basename "$3")" ;;
  *) fail "usage: $0 up|down|image NAME:TAG BINARY" ;;
esac

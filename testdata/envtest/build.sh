#!/usr/bin/env bash
# Builds kube-apiserver and etcd for envtest into $1 (default: the user cache),
# unless they are already there. Prints the folder (for KUBEBUILDER_ASSETS).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
k8s=v1.37.1
out="${1:-${XDG_CACHE_HOME:-$HOME/.cache}/validator-manager/envtest/$k8s}"
mkdir -p "$out"
cd "$here"
if [ ! -x "$out/kube-apiserver" ]; then
  echo "building kube-apiserver $k8s (cold: about 4 minutes on 2 cores)..." >&2
  go mod download >&2
  go build -ldflags "-s -w -X k8s.io/component-base/version.gitVersion=$k8s -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=37" \
    -o "$out/kube-apiserver.tmp" k8s.io/kubernetes/cmd/kube-apiserver
  mv "$out/kube-apiserver.tmp" "$out/kube-apiserver"
fi
if [ ! -x "$out/etcd" ]; then
  echo "building etcd..." >&2
  go build -ldflags "-s -w" -o "$out/etcd.tmp" ./etcd
  mv "$out/etcd.tmp" "$out/etcd"
fi
echo "$out"

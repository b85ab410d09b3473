#!/usr/bin/env bash
# Builds etcd, kube-apiserver and kube-controller-manager into $1 (default: the
# user cache), each only when it is not already there: the fallback of
# cmd/engine (`make engine`) when their download fails. Prints only the folder
# on stdout (for KUBEBUILDER_ASSETS and the embedded default's engine);
# progress goes to stderr, one line per stage with the elapsed seconds.
# Cold (nothing cached, 2 idle cores): about 8 minutes; warm: instant.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
k8s=v1.37.1
minor="${k8s#v1.}"; minor="${minor%%.*}"
out="${1:-${XDG_CACHE_HOME:-$HOME/.cache}/validator-manager/envtest/$k8s}"
mkdir -p "$out"
cd "$here"
start=$SECONDS
say() { printf '[%4ds] %s\n' "$((SECONDS - start))" "$*" >&2; }
ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$k8s -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor"

missing=()
for b in etcd kube-apiserver kube-controller-manager; do
  [ -x "$out/$b" ] || missing+=("$b")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "$out"
  exit 0
fi
say "building ${missing[*]} $k8s into $out (cold, nothing cached: about 8 minutes on 2 idle cores; later runs: instant)"
say "downloading modules"
go mod download >&2
say "modules ready"

build() { # name, package
  say "building $1"
  go build -ldflags "$ldflags" -o "$out/$1.tmp" "$2"
  mv "$out/$1.tmp" "$out/$1"
  say "$1 built"
}
for b in "${missing[@]}"; do
  case "$b" in
    etcd) say "building etcd"; go build -ldflags "-s -w" -o "$out/etcd.tmp" ./etcd; mv "$out/etcd.tmp" "$out/etcd"; say "etcd built" ;;
    kube-apiserver) build kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver ;;
    kube-controller-manager) build kube-controller-manager k8s.io/kubernetes/cmd/kube-controller-manager ;;
  esac
done
say "done"
echo "$out"

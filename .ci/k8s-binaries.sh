#!/usr/bin/env bash
# Builds kube-apiserver and kube-controller-manager v1.36.3 from the Go
# module proxy (pinned by e2e/k8sbin/go.mod + go.sum) into
# $SITEBUS_CACHE/k8s-v1.36.3/, once: later runs find them and return at once.
# etcd comes from Debian (etcd-server), which this version works with.
set -euo pipefail
K8S_VERSION=v1.36.3
CACHE=${SITEBUS_CACHE:-$HOME/.cache/sitebus}
out=$CACHE/k8s-$K8S_VERSION
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$K8S_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=36"
for cmd in kube-apiserver kube-controller-manager; do
  if [ -x "$out/$cmd" ]; then continue; fi
  echo "k8s-binaries: building $cmd $K8S_VERSION (several minutes, once)"
  t0=$(date +%s)
  (cd "$root/e2e/k8sbin" && GOWORK=off GOFLAGS=-mod=readonly go build -trimpath -ldflags "$ldflags" -o "$out/$cmd.tmp" "k8s.io/kubernetes/cmd/$cmd")
  mv "$out/$cmd.tmp" "$out/$cmd"
  echo "k8s-binaries: $cmd built in $(( $(date +%s) - t0 )) s"
done

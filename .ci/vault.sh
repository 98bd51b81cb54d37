#!/usr/bin/env bash
# Builds the HashiCorp Vault server v1.21.0 from the Go module proxy (pinned
# by e2e/vaultbin/go.mod + go.sum, a module of its own outside go.work so its
# ~1,000 modules never enter sitebus's go.sum) into
# $SITEBUS_CACHE/vault-v1.21.0/vault, once: later runs find it and return at
# once. The end-to-end and pkg/vault tests run it as a dev server on
# loopback. v1.21.0, not the newer v1.21.4, whose tagged sdk does not match
# the published one it requires (reference: provisioning-vcluster.md part C).
# About 15-30 min and 2.5 GB of RAM on 2 cores the first time.
set -euo pipefail
VAULT_VERSION=v1.21.0
CACHE=${SITEBUS_CACHE:-$HOME/.cache/sitebus}
out=$CACHE/vault-$VAULT_VERSION
root=$(cd "$(dirname "$0")/.." && pwd)
if [ -x "$out/vault" ]; then exit 0; fi
mkdir -p "$out"
echo "vault: building the Vault server $VAULT_VERSION (15-30 minutes, once) into $out"
t0=$(date +%s)
# A per-process temporary name: two runs at once must not leave a half-written
# binary under the final name.
tmp=$out/vault.tmp.$$
trap 'rm -f "$tmp"' EXIT
(cd "$root/e2e/vaultbin" && GOWORK=off GOFLAGS=-mod=readonly go build -trimpath -ldflags "-s -w" -o "$tmp" github.com/hashicorp/vault)
mv "$tmp" "$out/vault"
echo "vault: built in $(( $(date +%s) - t0 )) s"

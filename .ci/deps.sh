#!/usr/bin/env bash
# Installs what building and testing sitebus needs and is not a Go module:
# RabbitMQ and etcd (Debian packages, for the STOMP side and the Kubernetes
# API server of the end-to-end tests), Chromium (Debian package, the
# headless browser that loads the status page in e2e/statuspage) and
# buf (npm package, for protobuf generation). Idempotent: installs only what
# is missing. Tools land in $SITEBUS_CACHE (default ~/.cache/sitebus), keyed
# by version, outside the repository.
set -euo pipefail

BUF_VERSION=1.75.0
CACHE=${SITEBUS_CACHE:-$HOME/.cache/sitebus}

need_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
    echo "deps: need root to run: $*" >&2; exit 1; fi
}

apt_pkgs=()
command -v rabbitmq-server >/dev/null 2>&1 || [ -x /usr/sbin/rabbitmq-server ] || apt_pkgs+=(rabbitmq-server)
command -v npm >/dev/null 2>&1 || apt_pkgs+=(npm)
command -v etcd >/dev/null 2>&1 || apt_pkgs+=(etcd-server)
command -v chromium >/dev/null 2>&1 || apt_pkgs+=(chromium)
if [ ${#apt_pkgs[@]} -gt 0 ]; then
  echo "deps: installing ${apt_pkgs[*]} (apt)"
  need_root apt-get update -qq
  need_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${apt_pkgs[@]}" >/dev/null
fi

buf_dir=$CACHE/tools/buf-$BUF_VERSION
if [ ! -x "$buf_dir/node_modules/.bin/buf" ]; then
  echo "deps: installing buf $BUF_VERSION (npm) into $buf_dir"
  mkdir -p "$buf_dir"
  (cd "$buf_dir" && npm install --silent --no-audit --no-fund "@bufbuild/buf@$BUF_VERSION" >/dev/null)
fi

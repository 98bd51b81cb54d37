#!/bin/sh
# ko-build.sh IMPORTPATH: the Tiltfile's custom_build for its k8s mode.
# Builds IMPORTPATH (./services/cmd/sitebus, ./e2e/cmd/waldursim, ...) into
# an image with ko and pushes it straight to $EXPECTED_REF, the registry
# reference Tilt chose (its registry: the cluster's local one or
# --registry). No Docker daemon is involved. ko v0.18.1 comes from the Go
# module proxy, installed once into $SITEBUS_CACHE/ko-v0.18.1.
set -eu
: "${EXPECTED_REF:?run by Tilt (custom_build sets EXPECTED_REF)}"
: "${EXPECTED_TAG:?run by Tilt (custom_build sets EXPECTED_TAG)}"
KO_VERSION=v0.18.1
cache=${SITEBUS_CACHE:-$HOME/.cache/sitebus}/ko-$KO_VERSION
if [ ! -x "$cache/ko" ]; then
  echo "ko-build: installing ko $KO_VERSION into $cache (once)"
  GOBIN=$cache GOFLAGS= go install "github.com/google/ko@$KO_VERSION"
fi
# --bare: the image is exactly KO_DOCKER_REPO, i.e. $EXPECTED_REF without
# its tag (the last ':' part; a registry's own ':port' stays).
export KO_DOCKER_REPO="${EXPECTED_REF%:*}"
export KO_DEFAULTBASEIMAGE="${KO_DEFAULTBASEIMAGE:-gcr.io/distroless/static-debian12:nonroot}"
exec env GOFLAGS="-ldflags=-X=main.version=${SITEBUS_VERSION:-tilt-dev}" "$cache/ko" build \
  --bare --tags="$EXPECTED_TAG" --sbom=none --platform="${KO_PLATFORM:-linux/amd64}" "$1"

#!/usr/bin/env bash
# Builds tilt v0.34.0 from the Go module proxy (pinned by e2e/tiltbin/go.mod +
# go.sum) into $SITEBUS_CACHE/tilt-v0.34.0/tilt, once: later runs find it and
# return at once.
#
# Why not `go install github.com/tilt-dev/tilt/cmd/tilt@v0.34.0`: tilt's go.mod
# has replace directives, which go install refuses, so e2e/tiltbin is a
# wrapper module repeating them. And the module zip lacks the web UI bundle
# (pkg/assets/build holds only robots.txt), so every `tilt up`/`tilt ci` dies
# at start ("JS/CSS files are not available"). The fix: build from a copy of
# tilt's source, made here in the cache (never in the repository), with a
# stub index.html. The terminal UI, `tilt ci` and the API (`tilt get`, ...)
# are unaffected; the browser shows the stub's pointer to them.
set -euo pipefail
TILT_VERSION=v0.34.0
CACHE=${SITEBUS_CACHE:-$HOME/.cache/sitebus}
out=$CACHE/tilt-$TILT_VERSION
root=$(cd "$(dirname "$0")/.." && pwd)
if [ -x "$out/tilt" ]; then exit 0; fi

echo "tilt: building tilt $TILT_VERSION (several minutes, once)"
t0=$(date +%s)
work=$out/build
rm -rf "$work"
mkdir -p "$work"
cp "$root"/e2e/tiltbin/{go.mod,go.sum,tools.go} "$work/"
cd "$work"
# The checksum database does not know tilt (lookups answer 404); go.sum,
# committed in e2e/tiltbin, is what verifies the download.
export GOWORK=off GONOSUMDB=github.com/tilt-dev GOFLAGS="-mod=readonly -buildvcs=false"
go mod download github.com/tilt-dev/tilt
src=$(go list -m -f '{{.Dir}}' github.com/tilt-dev/tilt)
cp -r "$src" tiltsrc
chmod -R u+w tiltsrc
cat > tiltsrc/pkg/assets/build/index.html <<'EOF'
<!doctype html>
<html><head><meta charset="utf-8"><title>Tilt (sitebus build)</title></head>
<body>
<h1>Tilt web UI not bundled</h1>
<p>This tilt was built from the Go module proxy by sitebus's .ci/tilt.sh; the
module carries no web UI bundle. Use the terminal UI of <code>tilt up</code>, or
<code>tilt get uiresources</code>, <code>tilt logs</code>, <code>tilt trigger NAME</code>.</p>
</body></html>
EOF
go mod edit -replace github.com/tilt-dev/tilt=./tiltsrc
go build -trimpath -ldflags "-s -w -X main.version=${TILT_VERSION#v}" -o "$out/tilt.tmp" github.com/tilt-dev/tilt/cmd/tilt
mv "$out/tilt.tmp" "$out/tilt"
cd "$out"
rm -rf "$work"
echo "tilt: built in $(( $(date +%s) - t0 )) s: $("$out/tilt" version)"

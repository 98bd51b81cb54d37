//go:build tools

// Package tiltbin only records the tilt command as a dependency so that
// go.sum covers everything `go build` needs. .ci/tilt.sh builds it, with a
// copy of Tilt's source that adds the web-UI stub the module zip lacks.
package tiltbin

import _ "github.com/tilt-dev/tilt/cmd/tilt"

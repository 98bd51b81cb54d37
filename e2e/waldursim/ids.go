package waldursim

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/google/uuid"

	"github.com/sitebus/sitebus/e2e/simkit"
)

// normUUID accepts a UUID in the forms Python's uuid.UUID reads (dashed,
// hex, braced, urn; any case) and returns 32 lower-case hex digits, the
// form Waldur renders.
func normUUID(s string) (string, bool) {
	u, err := uuid.Parse(s)
	if err != nil {
		return "", false
	}
	return strings.ReplaceAll(u.String(), "-", ""), true
}

// newUUID returns a random version-4 UUID as hex, as Waldur writes them.
func newUUID() string { return strings.ReplaceAll(simkit.NewUUID(), "-", "") }

// derivedUUID is a stable UUID for objects the fixture does not name.
func derivedUUID(kind, from string) string {
	sum := sha256.Sum256([]byte(kind + ":" + from))
	b := sum[:16]
	b[6] = b[6]&0x0f | 0x50
	b[8] = b[8]&0x3f | 0x80
	return hex.EncodeToString(b)
}

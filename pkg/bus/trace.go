package bus

import (
	"strings"

	"github.com/nats-io/nats.go"
)

// headerCarrier adapts NATS headers to OpenTelemetry propagation. NATS
// headers are case-sensitive; W3C names the header `traceparent` in lower
// case, so that is what we write, and we read case-insensitively so a
// canonicalised `Traceparent` from another client still links up.
type headerCarrier nats.Header

func (c headerCarrier) Get(key string) string {
	h := nats.Header(c)
	if v := h.Get(key); v != "" {
		return v
	}
	for k, vs := range h {
		if strings.EqualFold(k, key) && len(vs) > 0 {
			return vs[0]
		}
	}
	return ""
}

func (c headerCarrier) Set(key, value string) { nats.Header(c).Set(strings.ToLower(key), value) }

func (c headerCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}

package config

import (
	"log/slog"
	"strconv"
)

// Secret holds a credential. Every way of printing or encoding it yields
// "[redacted]" (or "" when empty), so a Root can be logged or dumped as
// JSON without leaking tokens; Reveal is the one explicit way to read it.
type Secret string

const redacted = "[redacted]"

// Reveal returns the credential. Call it only where it is sent to its
// destination (an Authorization header, a token request).
func (s Secret) Reveal() string { return string(s) }

// String implements fmt.Stringer; fmt uses it for %v, %+v and %s, also for
// Secrets nested in structs.
func (s Secret) String() string {
	if s == "" {
		return ""
	}
	return redacted
}

// GoString implements fmt.GoStringer for %#v.
func (s Secret) GoString() string { return strconv.Quote(s.String()) }

// LogValue implements slog.LogValuer.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.String()) }

// MarshalText implements encoding.TextMarshaler for encoders that use it.
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// MarshalJSON implements json.Marshaler.
func (s Secret) MarshalJSON() ([]byte, error) { return []byte(strconv.Quote(s.String())), nil }

// MarshalYAML implements yaml.Marshaler.
func (s Secret) MarshalYAML() (any, error) { return s.String(), nil }

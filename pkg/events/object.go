package events

import (
	"encoding/json"
	"slices"
	"unicode/utf8"
)

// object is the top level of a JSON object: each member's name and its
// value's bytes as they stand in the body, in body order. The bridge reads
// two or three members of every event it ingests; decoding the whole body
// into a map with encoding/json (a string, a copied value and a map slot
// per member, and a goroutine stack grown deep enough for the reflective
// decoder) was the largest part of its own CPU time per frame.
type object []member

type member struct {
	name string
	raw  json.RawMessage
}

// get is the value of the member called name, as decoding into a map
// would find it: the last one of that name wins.
func (o object) get(name string) (json.RawMessage, bool) {
	for i := len(o) - 1; i >= 0; i-- {
		if o[i].name == name {
			return o[i].raw, true
		}
	}
	return nil, false
}

// parseObject splits body into its top-level members. ok is false when
// body is not valid JSON or not an object (a null included): callers then
// decode it with encoding/json, for the error message it gives. The values
// are slices of body, not copies.
func parseObject(body []byte) (o object, ok bool) {
	if !json.Valid(body) {
		return nil, false
	}
	// From here on body is known to be well-formed JSON, so the walk only
	// has to find where each member starts and ends.
	i := skipSpace(body, 0)
	if body[i] != '{' {
		return nil, false
	}
	o = make(object, 0, 8)
	i = skipSpace(body, i+1)
	if body[i] == '}' {
		return o, true
	}
	for {
		end := skipString(body, i)
		key := body[i+1 : end-1]
		var name string
		// Escapes, and bytes that are not UTF-8 (which encoding/json turns
		// into U+FFFD), are left to the decoder.
		if slices.Contains(key, '\\') || !utf8.Valid(key) {
			if json.Unmarshal(body[i:end], &name) != nil {
				return nil, false
			}
		} else {
			name = string(key)
		}
		i = skipSpace(body, end)
		i = skipSpace(body, i+1) // past ':'
		vend := skipValue(body, i)
		o = append(o, member{name: name, raw: body[i:vend:vend]})
		i = skipSpace(body, vend)
		if body[i] == '}' {
			return o, true
		}
		i = skipSpace(body, i+1) // past ','
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index just past the string starting at b[i] ('"').
func skipString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return i
}

// skipValue returns the index just past the value starting at b[i].
func skipValue(b []byte, i int) int {
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				i = skipString(b, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
		}
		return i
	default: // number, true, false, null
		for i < len(b) {
			switch b[i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return i
			}
			i++
		}
		return i
	}
}

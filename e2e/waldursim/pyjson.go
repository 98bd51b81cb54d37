package waldursim

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf16"
)

// PyField is one key of a PyObject.
type PyField struct {
	Key   string
	Value any
}

// PyObject is a JSON object that keeps insertion order and encodes exactly
// like Python's json.dumps with default arguments (", " and ": "
// separators, ensure_ascii). Mastermind's STOMP bodies are such strings, and
// x-message-id hashes them, so byte equality matters.
type PyObject []PyField

// Set appends key (or replaces its value in place, as a dict would).
func (o PyObject) Set(key string, v any) PyObject {
	for i := range o {
		if o[i].Key == key {
			o[i].Value = v
			return o
		}
	}
	return append(o, PyField{key, v})
}

// Encode renders o as json.dumps would.
func (o PyObject) Encode() string {
	var sb strings.Builder
	pyEncode(&sb, o)
	return sb.String()
}

func pyEncode(sb *strings.Builder, v any) {
	switch x := v.(type) {
	case string:
		pyString(sb, x)
	case float64:
		sb.WriteString(pyFloat(x))
	case []string:
		pyList(sb, x)
	case []any:
		pyList(sb, x)
	case PyObject:
		sb.WriteByte('{')
		for i, f := range x {
			if i > 0 {
				sb.WriteString(", ")
			}
			pyString(sb, f.Key)
			sb.WriteString(": ")
			pyEncode(sb, f.Value)
		}
		sb.WriteByte('}')
	case nil, bool, int, int64: // print alike in Go and Python
		b, _ := json.Marshal(x)
		sb.Write(b)
	default:
		panic(fmt.Sprintf("pyjson: unsupported type %T", v))
	}
}

func pyList[T any](sb *strings.Builder, l []T) {
	sb.WriteByte('[')
	for i, e := range l {
		if i > 0 {
			sb.WriteString(", ")
		}
		pyEncode(sb, e)
	}
	sb.WriteByte(']')
}

// pyFloat follows float.__repr__ for the common cases (1.0, 0.5, 1e-07).
func pyFloat(f float64) string {
	s := strconv.FormatFloat(f, 'g', -1, 64)
	if !strings.ContainsAny(s, ".eEn") { // integral: Python prints 1.0
		s += ".0"
	}
	if i := strings.IndexAny(s, "e"); i >= 0 && len(s) > i+2 && s[i+2] != '0' && len(s[i+2:]) == 1 {
		s = s[:i+2] + "0" + s[i+2:] // Python pads exponents to two digits
	}
	return s
}

// pyString escapes like json.dumps(ensure_ascii=True): \" \\ \b \f \n \r \t,
// everything else outside printable ASCII as \uXXXX (surrogate pairs above
// the BMP).
func pyString(sb *strings.Builder, s string) {
	sb.WriteByte('"')
	for _, r := range s {
		esc, short := pyEscapes[r]
		switch {
		case short:
			sb.WriteString(esc)
		case r >= 0x20 && r <= 0x7e:
			sb.WriteRune(r)
		case r > 0xffff:
			r1, r2 := utf16.EncodeRune(r)
			fmt.Fprintf(sb, `\u%04x\u%04x`, r1, r2)
		default:
			fmt.Fprintf(sb, `\u%04x`, r)
		}
	}
	sb.WriteByte('"')
}

var pyEscapes = map[rune]string{'"': `\"`, '\\': `\\`, '\b': `\b`, '\f': `\f`, '\n': `\n`, '\r': `\r`, '\t': `\t`}

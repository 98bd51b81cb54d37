package events

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzInspect feeds the bridge's event validation the bodies a broker may
// carry. Whatever the body, the outcome must be one the bridge can act on
// safely: an error is always ErrMalformed (it parks the frame), an accepted
// body really carries the UUIDs its type needs, and the ordering key is a
// fixed shape built only from a validated UUID, so it cannot smuggle text
// into a subject or a header.
func FuzzInspect(f *testing.F) {
	const u = "11111111-2222-3333-4444-555555555555"
	for _, typ := range ObjectTypes() {
		f.Add(typ, []byte(`{}`))
	}
	f.Add(Order, []byte(`{"order_uuid":"`+u+`","order_state":"pending-provider","offering_uuid":"0123456789abcdef0123456789abcdef"}`))
	f.Add(Resource, []byte(`{"resource_uuid":"11111111222233334444555555555555","resource_backend_id":"ns-1"}`))
	f.Add(UserRole, []byte(`{"user_uuid":"`+u+`","project_uuid":"`+u+`","role_name":"PROJECT.ADMIN","granted":true}`))
	f.Add(Order, []byte(`{"order_uuid":"\u0031111111-2222-3333-4444-555555555555"}`))
	f.Add(Order, []byte(`null`))
	f.Add("invoice", []byte(`[]`))
	f.Fuzz(func(t *testing.T, objectType string, body []byte) {
		key, err := Inspect(objectType, body)
		if err != nil && !errors.Is(err, ErrMalformed) {
			t.Fatalf("error %v is not ErrMalformed", err)
		}
		if key != OrderingKey(objectType, body) && Known(objectType) {
			t.Fatalf("Inspect key %q differs from OrderingKey %q", key, OrderingKey(objectType, body))
		}
		checkKey(t, key)
		if err != nil {
			return
		}
		if !Known(objectType) {
			t.Fatalf("unknown object type %q accepted", objectType)
		}
		if !utf8.Valid(body) {
			t.Fatalf("accepted body %q is not UTF-8", body)
		}
		var fields map[string]any
		if json.Unmarshal(body, &fields) != nil || fields == nil {
			t.Fatalf("accepted body %q is not a JSON object", body)
		}
		for _, alternatives := range requiredUUIDs[objectType] {
			ok := false
			for _, name := range alternatives {
				if s, isStr := fields[name].(string); isStr && IsUUID(s) {
					ok = true
				}
			}
			if !ok {
				t.Fatalf("accepted %s body lacks a UUID among %v: %q", objectType, alternatives, body)
			}
		}
	})
}

// checkKey: "" or <kind>:<32 lower-case hex digits>.
func checkKey(t *testing.T, key string) {
	t.Helper()
	if key == "" {
		return
	}
	kind, hex, ok := strings.Cut(key, ":")
	if !ok || (kind != "order" && kind != "resource" && kind != "project") || len(hex) != 32 {
		t.Fatalf("ordering key %q is not <order|resource|project>:<32 hex>", key)
	}
	for _, c := range hex {
		if !strings.ContainsRune("0123456789abcdef", c) {
			t.Fatalf("ordering key %q is not lower-case hex", key)
		}
	}
}

// FuzzParseObjectMatchesDecoder holds the bridge's hand-written reading of
// an event body to encoding/json's: the same bodies are objects, and every
// member has the value decoding into a map gives it (duplicates included:
// the last wins).
func FuzzParseObjectMatchesDecoder(f *testing.F) {
	for _, body := range []string{
		`{}`, ` { "a" : 1 , "b":[1,{"c":"}"}], "a":"x\"y" } `, `{"a\u0062":null,"ab":true}`, `null`, `[]`, `"s"`, `{"a":1`,
		`{"order_uuid":"11111111-2222-3333-4444-555555555555","n":-1.5e3,"o":{"p":[]}}`, "{\"a\":\"\xff\"}",
	} {
		f.Add([]byte(body))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var want map[string]json.RawMessage
		decoded := json.Unmarshal(body, &want) == nil && want != nil
		got, ok := parseObject(body)
		if ok != decoded {
			t.Fatalf("parseObject(%q) ok=%v, encoding/json object=%v", body, ok, decoded)
		}
		for name, raw := range want {
			g, found := got.get(name)
			if !found || !bytes.Equal(g, raw) {
				t.Fatalf("parseObject(%q) member %q = %q (found %v), encoding/json %q", body, name, g, found, raw)
			}
		}
		for _, m := range got {
			if _, found := want[m.name]; !found {
				t.Fatalf("parseObject(%q) has member %q encoding/json does not", body, m.name)
			}
		}
	})
}

package simkit

import (
	"cmp"
	"encoding/json"
	"testing"
)

func TestRefuseAnswersTheFirstFailingCheck(t *testing.T) {
	first, second := &Error{Status: 400}, &Error{Status: 409}
	if e := cmp.Or(Refuse(false, first), Refuse(true, second), Refuse(true, first)); e != second {
		t.Fatalf("got %v, want the second check's", e)
	}
	if e := cmp.Or(Refuse(false, first), Refuse(false, second)); e != nil {
		t.Fatalf("got %v, want nil when every check passes", e)
	}
}

func TestSetCopiesOnlyWhatTheRequestCarried(t *testing.T) {
	v, n := "old", "new"
	Set(&v, nil)
	if v != "old" {
		t.Fatalf("absent field changed the value to %q", v)
	}
	Set(&v, &n)
	if v != "new" {
		t.Fatalf("got %q, want new", v)
	}
}

func TestNullableTellsAbsentNullAndValue(t *testing.T) {
	for body, want := range map[string]Nullable[string]{
		`{}`: {}, `{"f":null}`: {Set: true}, `{"f":"x"}`: {V: "x", Set: true}, `{"f":5}`: {Set: true},
	} {
		var in struct {
			F Nullable[string] `json:"f"`
		}
		if err := json.Unmarshal([]byte(body), &in); err != nil || in.F != want {
			t.Errorf("%s: got %+v (%v), want %+v", body, in.F, err, want)
		}
	}
}

func TestPathTemplateReplacesUUIDsAndHexIDs(t *testing.T) {
	for path, want := range map[string]string{
		"/compute/v2.1/servers/0b6f4a3e-1c2d-4e5f-8a9b-0c1d2e3f4a5b":   "/compute/v2.1/servers/{id}",
		"/identity/v3/projects/0123456789abcdef0123456789abcdef/users": "/identity/v3/projects/{id}/users",
		"/network/v2.0/networks/public":                                "/network/v2.0/networks/public",
		"/volume/v3/0123456789ABCDEF0123456789ABCDEF":                  "/volume/v3/0123456789ABCDEF0123456789ABCDEF",
	} {
		if got := PathTemplate(path); got != want {
			t.Errorf("%s: got %s, want %s", path, got, want)
		}
	}
}

package events_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/sitebus/sitebus/pkg/events"
)

func TestValidate(t *testing.T) {
	const u = "0123456789abcdef0123456789abcdef"
	tests := map[string]struct {
		objectType, body string
		wantErr          string
	}{
		"order with hex uuid":                   {objectType: "order", body: `{"order_uuid": "` + u + `", "order_state": "pending-provider"}`},
		"order with dashed uuid":                {objectType: "order", body: `{"order_uuid": "01234567-89ab-cdef-0123-456789abcdef"}`},
		"user_role keyed by project only":       {objectType: "user_role", body: `{"project_uuid": "` + u + `", "granted": true}`},
		"type without required ids":             {objectType: "user_profile", body: `{}`},
		"body that is not JSON":                 {objectType: "order", body: `order 42 please`, wantErr: "order body is not a JSON object"},
		"JSON that is not an object":            {objectType: "order", body: `[1,2]`, wantErr: "not a JSON object"},
		"null body":                             {objectType: "order", body: `null`, wantErr: "body is null"},
		"Latin-1 text in a string is not UTF-8": {objectType: "order", body: "{\"order_uuid\": \"" + u + "\", \"name\": \"caf\xe9\"}", wantErr: "order body is not valid UTF-8"},
		"unknown object type":                   {objectType: "invoice", body: `{}`, wantErr: `unknown object type "invoice"`},
		"missing order uuid":                    {objectType: "order", body: `{"order_state": "done"}`, wantErr: "order event lacks order_uuid"},
		"order uuid that is not a uuid":         {objectType: "order", body: `{"order_uuid": "../../etc"}`, wantErr: `invalid UUID: order_uuid="../../etc"`},
		"order uuid of the wrong JSON type":     {objectType: "order", body: `{"order_uuid": 7}`, wantErr: "invalid UUID: order_uuid=7"},
		"account needs both ids":                {objectType: "service_account", body: `{"account_uuid": "` + u + `"}`, wantErr: "lacks project_uuid"},
		"user_role with none of its ids":        {objectType: "user_role", body: `{"granted": true}`, wantErr: "lacks user_uuid or resource_uuid or project_uuid"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			err := events.Validate(tc.objectType, []byte(tc.body))
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.Is(err, events.ErrMalformed) {
				t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestObjectTypesCoverWaldurEnum(t *testing.T) {
	if got := len(events.ObjectTypes()); got != 14 {
		t.Errorf("%d object types, Waldur's enum has 14", got)
	}
	if events.HexUUID("01234567-89AB-cdef-0123-456789abcdef") != "0123456789abcdef0123456789abcdef" {
		t.Error("HexUUID does not normalise")
	}
}

func TestOrderingKey(t *testing.T) {
	const hex = "0123456789abcdef0123456789abcdef"
	const dashed = "01234567-89ab-cdef-0123-456789abcdef"
	tests := map[string]struct {
		objectType, body, want string
	}{
		"order by its order uuid, dashes removed":       {events.Order, `{"order_uuid":"` + dashed + `"}`, "order:" + hex},
		"order without a valid uuid has no key":         {events.Order, `{"order_uuid":"nope","resource_uuid":"` + hex + `"}`, ""},
		"resource event by its resource":                {events.Resource, `{"resource_uuid":"` + hex + `"}`, "resource:" + hex},
		"role event of one resource by the resource":    {events.UserRole, `{"resource_uuid":"` + hex + `","project_uuid":"ffffffffffffffffffffffffffffffff"}`, "resource:" + hex},
		"project-wide role event by the project":        {events.UserRole, `{"project_uuid":"` + dashed + `"}`, "project:" + hex},
		"periodic limits by the resource":               {events.ResourcePeriodicLimits, `{"resource_uuid":"` + hex + `"}`, "resource:" + hex},
		"body that is not JSON has no key":              {events.Resource, `not json`, ""},
		"event naming nothing serialisable has no key":  {events.UserProfile, `{}`, ""},
		"upper-case uuid is the same key as lower-case": {events.Resource, `{"resource_uuid":"0123456789ABCDEF0123456789ABCDEF"}`, "resource:" + hex},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := events.OrderingKey(tc.objectType, []byte(tc.body)); got != tc.want {
				t.Fatalf("OrderingKey(%s, %s) = %q, want %q", tc.objectType, tc.body, got, tc.want)
			}
		})
	}
}

func TestIsUUID(t *testing.T) {
	// The forms Waldur sends (hex with or without dashes, either case) and
	// near misses.
	tests := map[string]struct {
		s    string
		want bool
	}{
		"32 hex digits":                 {"0123456789abcdef0123456789abcdef", true},
		"32 upper-case hex digits":      {"0123456789ABCDEF0123456789ABCDEF", true},
		"dashed":                        {"01234567-89ab-cdef-0123-456789abcdef", true},
		"dashed upper-case":             {"01234567-89AB-CDEF-0123-456789ABCDEF", true},
		"empty":                         {"", false},
		"31 digits":                     {"0123456789abcdef0123456789abcde", false},
		"33 digits":                     {"0123456789abcdef0123456789abcdef0", false},
		"non-hex letter":                {"0123456789abcdeg0123456789abcdef", false},
		"dash in the wrong place":       {"0123456-789ab-cdef-0123-456789abcdef", false},
		"dashed with a non-hex letter":  {"01234567-89ab-cdef-0123-456789abcdeg", false},
		"braces":                        {"{01234567-89ab-cdef-0123-456789abcd}", false},
		"36 characters without dashes":  {"0123456789abcdef0123456789abcdef0123", false},
		"dashes only at the four marks": {"01234567-89ab-cdef-0123-456789ab-def", false},
		"non-ASCII in place of a digit": {"0123456789abcdef0123456789abcdé", false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := events.IsUUID(tc.s); got != tc.want {
				t.Errorf("IsUUID(%q) = %v, want %v", tc.s, got, tc.want)
			}
		})
	}
}

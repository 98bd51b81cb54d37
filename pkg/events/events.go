// Package events knows the Waldur event payloads that arrive over STOMP:
// which object types exist, which fields each must carry, and typed views of
// the ones sitebus acts on. The bridge validates with it before anything
// reaches the bus, so services can trust a payload's shape.
package events

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// Object types Waldur publishes (ObservableObjectTypeEnum).
const (
	CourseAccount                = "course_account"
	ImportableResources          = "importable_resources"
	OfferingResourcesSync        = "offering_resources_sync"
	OfferingUser                 = "offering_user"
	Order                        = "order"
	Resource                     = "resource"
	ResourceAPIKeyRotation       = "resource_api_key_rotation"
	ResourceEndDateChangeRequest = "resource_end_date_change_request"
	ResourcePeriodicLimits       = "resource_periodic_limits"
	ServiceAccount               = "service_account"
	UserLifecycle                = "user_lifecycle"
	UserProfile                  = "user_profile"
	UserRole                     = "user_role"
	UserSSHKey                   = "user_ssh_key"
)

// requiredUUIDs lists, per object type, the UUID fields a payload must carry
// for any handler to act on it. A list of alternatives means one of them.
var requiredUUIDs = map[string][][]string{
	CourseAccount:                {{"account_uuid"}, {"project_uuid"}},
	ImportableResources:          {{"backend_resource_request_uuid"}},
	OfferingResourcesSync:        {{"offering_uuid"}},
	OfferingUser:                 {{"offering_user_uuid", "user_uuid"}},
	Order:                        {{"order_uuid"}},
	Resource:                     {{"resource_uuid"}},
	ResourceAPIKeyRotation:       {{"resource_uuid"}},
	ResourceEndDateChangeRequest: {},
	ResourcePeriodicLimits:       {{"resource_uuid"}},
	ServiceAccount:               {{"account_uuid"}, {"project_uuid"}},
	UserLifecycle:                {},
	UserProfile:                  {},
	UserRole:                     {{"user_uuid", "resource_uuid", "project_uuid"}},
	UserSSHKey:                   {},
}

// ObjectTypes is every object type Waldur can publish, sorted.
func ObjectTypes() []string {
	out := make([]string, 0, len(requiredUUIDs))
	for k := range requiredUUIDs {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Known reports whether t is an object type Waldur publishes.
func Known(t string) bool { _, ok := requiredUUIDs[t]; return ok }

// IsUUID reports whether s is a UUID, hex with or without dashes: 32 hex
// digits, or 8-4-4-4-12 of them, in either case. Checked by hand rather
// than with a regular expression because the bridge validates every
// event's UUIDs on its ingest path.
func IsUUID(s string) bool {
	switch len(s) {
	case 32:
		for i := 0; i < len(s); i++ {
			if !isHex(s[i]) {
				return false
			}
		}
		return true
	case 36:
		for i := 0; i < len(s); i++ {
			switch i {
			case 8, 13, 18, 23:
				if s[i] != '-' {
					return false
				}
			default:
				if !isHex(s[i]) {
					return false
				}
			}
		}
		return true
	}
	return false
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// HexUUID normalises a UUID to 32 lower-case hex digits.
func HexUUID(s string) string { return strings.ToLower(strings.ReplaceAll(s, "-", "")) }

// ErrMalformed wraps every validation failure.
var ErrMalformed = errors.New("malformed event")

// Validate checks that body is a JSON object carrying the UUIDs objectType
// needs. The error says exactly what is wrong, for the dead-letter reason.
func Validate(objectType string, body []byte) error {
	_, err := Inspect(objectType, body)
	return err
}

// Inspect is Validate and OrderingKey in one reading of body: the bridge
// needs both for every event it ingests, and decoding the JSON twice was a
// tenth of its CPU time. The key is returned even when validation fails
// (a parked event keeps its partition); it is "" when body is not a JSON
// object.
func Inspect(objectType string, body []byte) (key string, err error) {
	req, ok := requiredUUIDs[objectType]
	if !ok {
		return "", fmt.Errorf("%w: unknown object type %q", ErrMalformed, objectType)
	}
	fields, err := members(body)
	if err != nil {
		return "", fmt.Errorf("%w: %s %w", ErrMalformed, objectType, err)
	}
	key = keyOf(objectType, fields)
	// JSON is UTF-8 (RFC 8259, section 8.1) and Waldur sends nothing else;
	// encoding/json would quietly turn other bytes inside a string into
	// U+FFFD, so a Latin-1 or broken body would pass as a different text.
	if !utf8.Valid(body) {
		return key, fmt.Errorf("%w: %s body is not valid UTF-8", ErrMalformed, objectType)
	}
	return key, validateFields(objectType, req, fields)
}

// members reads the top level of a body that must be a JSON object. A
// body that is not one is decoded by encoding/json for the words of the
// error (which say where the syntax breaks).
func members(body []byte) (object, error) {
	if o, ok := parseObject(body); ok {
		return o, nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil {
		return nil, fmt.Errorf("body is not a JSON object: %w", err)
	}
	if fields == nil {
		return nil, errors.New("body is null")
	}
	// Not reached: parseObject takes every object encoding/json takes.
	o := make(object, 0, len(fields))
	for name, raw := range fields {
		o = append(o, member{name: name, raw: raw})
	}
	return o, nil
}

func validateFields(objectType string, req [][]string, fields object) error {
	for _, alternatives := range req {
		found := false
		var bad []string
		for _, f := range alternatives {
			raw, ok := fields.get(f)
			if !ok || string(raw) == "null" {
				continue
			}
			if s, ok := jsonString(raw); !ok || !IsUUID(s) {
				bad = append(bad, fmt.Sprintf("%s=%s", f, truncate(string(raw), 80)))
				continue
			}
			found = true
			break
		}
		if !found {
			if len(bad) > 0 {
				return fmt.Errorf("%w: %s event has an invalid UUID: %s", ErrMalformed, objectType, strings.Join(bad, ", "))
			}
			return fmt.Errorf("%w: %s event lacks %s", ErrMalformed, objectType, strings.Join(alternatives, " or "))
		}
	}
	return nil
}

// jsonString is the string raw holds, if it holds one.
func jsonString(raw json.RawMessage) (string, bool) {
	// A UUID needs no escapes: take the bytes between the quotes as they
	// are, and leave anything with a backslash to the decoder.
	if n := len(raw); n >= 2 && raw[0] == '"' && raw[n-1] == '"' && !slices.Contains(raw[1:n-1], '\\') {
		return string(raw[1 : n-1]), true
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// OrderMessage is the payload of an order event.
type OrderMessage struct {
	OrderUUID    string `json:"order_uuid"`
	OrderState   string `json:"order_state"`
	OfferingUUID string `json:"offering_uuid"`
}

// ResourceMessage is the payload of a resource event.
type ResourceMessage struct {
	ResourceUUID         string `json:"resource_uuid"`
	ResourceBackendID    string `json:"resource_backend_id"`
	Downscaled           *bool  `json:"downscaled"`
	RestrictMemberAccess *bool  `json:"restrict_member_access"`
	Paused               *bool  `json:"paused"`
	OfferingUUID         string `json:"offering_uuid"`
}

// UserRoleMessage is the payload of a user_role event.
type UserRoleMessage struct {
	UserUUID     string `json:"user_uuid"`
	UserUsername string `json:"user_username"`
	ProjectUUID  string `json:"project_uuid"`
	ProjectName  string `json:"project_name"`
	RoleName     string `json:"role_name"`
	Granted      bool   `json:"granted"`
	ResourceUUID string `json:"resource_uuid"`
	OfferingUUID string `json:"offering_uuid"`
}

// NonActionableOrderStates are order states the site has nothing to do for
// (the Python agent's STOMP handler skips the same set).
var NonActionableOrderStates = []string{"done", "erred", "pending-consumer", "canceled", "rejected", "pending-project", "pending-start-date"}

// OrderingKey names what an event is about, so that events about one thing
// are handled one at a time and in order: "order:<hex>" for an order (its
// resource is only known once the order is read), "resource:<hex>" for
// events of one resource, "project:<hex>" for project-wide role changes.
// "" when the body names none of them.
func OrderingKey(objectType string, body []byte) string {
	fields, err := members(body)
	if err != nil {
		return ""
	}
	return keyOf(objectType, fields)
}

// keyOf is OrderingKey of a decoded body.
func keyOf(objectType string, fields object) string {
	uuid := func(name string) (string, bool) {
		raw, _ := fields.get(name)
		s, ok := jsonString(raw)
		return s, ok && IsUUID(s)
	}
	if objectType == Order {
		if u, ok := uuid("order_uuid"); ok {
			return "order:" + HexUUID(u)
		}
		return ""
	}
	if u, ok := uuid("resource_uuid"); ok {
		return "resource:" + HexUUID(u)
	}
	if u, ok := uuid("project_uuid"); ok && objectType == UserRole {
		return "project:" + HexUUID(u)
	}
	return ""
}

// OrderKey and ResourceKey are the ordering keys of one order and one
// resource, for messages that are not Waldur events (commands, outcomes).
func OrderKey(uuid string) string { return "order:" + HexUUID(uuid) }

// ResourceKey: see OrderKey.
func ResourceKey(uuid string) string { return "resource:" + HexUUID(uuid) }

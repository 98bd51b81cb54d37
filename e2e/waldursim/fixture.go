package waldursim

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/google/uuid"
	"gopkg.in/yaml.v3"

	"github.com/sitebus/sitebus/e2e/simkit"
)

// Fixture is the initial state of the simulator. UUIDs may be written
// dashed or as hex; they are normalised to hex, as Waldur renders them.
type Fixture struct {
	Users     []User     `yaml:"users"`
	Customers []Customer `yaml:"customers"`
	Projects  []Project  `yaml:"projects"`
	Offerings []Offering `yaml:"offerings"`
	Plans     []Plan     `yaml:"plans"`
	Resources []Resource `yaml:"resources"`
	Orders    []Order    `yaml:"orders"`
}

// User is a Waldur user with an API token.
type User struct {
	UUID     string `yaml:"uuid" json:"uuid"`
	Username string `yaml:"username" json:"username"`
	Token    string `yaml:"token" json:"-"`
	FullName string `yaml:"full_name" json:"full_name"`
	Email    string `yaml:"email" json:"email"`
}

// Customer is a Waldur organisation; it is also the service provider of
// its offerings.
type Customer struct {
	UUID string `yaml:"uuid"`
	Name string `yaml:"name"`
	Slug string `yaml:"slug"`
}

// Project belongs to a customer.
type Project struct {
	UUID         string `yaml:"uuid"`
	Name         string `yaml:"name"`
	Slug         string `yaml:"slug"`
	Description  string `yaml:"description"`
	CustomerUUID string `yaml:"customer_uuid"`
	EndDate      string `yaml:"end_date"`
}

// Offering is a marketplace offering; Components and PluginOptions are
// passed through as written.
type Offering struct {
	UUID          string           `yaml:"uuid"`
	Name          string           `yaml:"name"`
	CustomerUUID  string           `yaml:"customer_uuid"`
	Type          string           `yaml:"type"`
	State         string           `yaml:"state"`
	BackendID     string           `yaml:"backend_id"`
	Components    []map[string]any `yaml:"components"`
	PluginOptions map[string]any   `yaml:"plugin_options"`
}

// Plan is an offering plan with per-component quotas.
type Plan struct {
	UUID         string         `yaml:"uuid"`
	Name         string         `yaml:"name"`
	OfferingUUID string         `yaml:"offering_uuid"`
	Quotas       map[string]int `yaml:"quotas"`
}

// Resource is a marketplace resource with its project team.
type Resource struct {
	UUID                 string         `yaml:"uuid"`
	Name                 string         `yaml:"name"`
	Slug                 string         `yaml:"slug"`
	State                string         `yaml:"state"`
	BackendID            string         `yaml:"backend_id"`
	Offering             string         `yaml:"offering"`
	Project              string         `yaml:"project"`
	Plan                 string         `yaml:"plan"`
	Limits               map[string]int `yaml:"limits"`
	Paused               bool           `yaml:"paused"`
	Downscaled           bool           `yaml:"downscaled"`
	RestrictMemberAccess bool           `yaml:"restrict_member_access"`
	Attributes           map[string]any `yaml:"attributes"`
	EndDate              string         `yaml:"end_date"`
	Team                 []TeamMember   `yaml:"team"`

	BackendMetadata   map[string]any   `yaml:"-"`
	Endpoints         []map[string]any `yaml:"-"`
	ErrorMessage      string           `yaml:"-"`
	ErrorTraceback    string           `yaml:"-"`
	Created, Modified string           `yaml:"-"`
	// EventSeq numbers this resource's events (sequence_number).
	EventSeq int `yaml:"-"`
}

// TeamMember is a ProjectUser as returned by .../team/.
type TeamMember struct {
	UUID                 string `yaml:"uuid" json:"uuid"`
	Username             string `yaml:"username" json:"username"`
	FullName             string `yaml:"full_name" json:"full_name"`
	Email                string `yaml:"email" json:"email"`
	Role                 string `yaml:"role" json:"role"`
	OfferingUserUsername string `yaml:"offering_user_username" json:"offering_user_username"`
	OfferingUserState    string `yaml:"offering_user_state" json:"offering_user_state"`
	ExpirationTime       string `yaml:"expiration_time" json:"expiration_time,omitempty"`
}

// Order is a marketplace order against one resource.
type Order struct {
	UUID       string         `yaml:"uuid"`
	Type       string         `yaml:"type"`
	State      string         `yaml:"state"`
	Resource   string         `yaml:"resource"`
	Plan       string         `yaml:"plan"`
	Limits     map[string]int `yaml:"limits"`
	Attributes map[string]any `yaml:"attributes"`

	BackendID         string `yaml:"-"`
	ErrorMessage      string `yaml:"-"`
	ErrorTraceback    string `yaml:"-"`
	Created, Modified string `yaml:"-"`
	CompletedAt       string `yaml:"-"`
}

// LoadFixture reads a YAML fixture file.
func LoadFixture(path string) (*Fixture, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	f, err := ParseFixture(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// ParseFixture parses and validates a YAML fixture: unknown keys, bad UUIDs
// and dangling references are errors, so typos do not silently shrink the
// test world.
func ParseFixture(data []byte) (*Fixture, error) {
	var f Fixture
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("parse fixture: %w", err)
	}
	if err := f.normalize(); err != nil {
		return nil, err
	}
	return &f, nil
}

// Valid enumerations, as Mastermind defines them.
var (
	orderStates = []string{"pending-consumer", "pending-provider", "pending-project",
		"pending-start-date", "executing", "done", "erred", "canceled", "rejected"}
	orderTypes     = []string{"Create", "Update", "Terminate", "Restore"}
	resourceStates = []string{"Creating", "OK", "Erred", "Updating", "Terminating", "Terminated"}
	objectTypes    = []string{"course_account", "importable_resources", "offering_resources_sync",
		"offering_user", "order", "resource", "resource_api_key_rotation",
		"resource_end_date_change_request", "resource_periodic_limits", "service_account",
		"user_lifecycle", "user_profile", "user_role", "user_ssh_key"}
)

// ref is a uuid an object names: of an object of kind, which must exist
// unless the ref is optional (then it may also be empty).
type ref struct {
	kind     string
	id       *string
	optional bool
}

func (f *Fixture) normalize() error {
	var errs []error
	fix := func(what string, p *string, required bool) {
		if *p == "" && !required {
			return
		}
		h, ok := normUUID(*p)
		if !ok {
			errs = append(errs, fmt.Errorf("%s: invalid uuid %q", what, *p))
			return
		}
		*p = h
	}
	ids := map[string]bool{}
	// object checks an object's uuid, unique among its kind's, and the
	// objects it names (a project's customer, an order's resource, ...).
	object := func(kind string, id *string, refs ...ref) {
		fix(kind, id, true)
		if ids[kind+*id] {
			errs = append(errs, fmt.Errorf("duplicate %s %s", kind, *id))
		}
		ids[kind+*id] = true
		for _, r := range refs {
			fix(kind+" "+r.kind, r.id, !r.optional)
			if !r.optional && !ids[r.kind+*r.id] {
				errs = append(errs, fmt.Errorf("%s %s: unknown %s %s", kind, *id, r.kind, *r.id))
			}
		}
	}
	for i := range f.Users {
		u := &f.Users[i]
		object("user", &u.UUID)
		if u.Token == "" || u.Username == "" {
			errs = append(errs, fmt.Errorf("user %s: username and token are required", u.UUID))
		}
	}
	for i := range f.Customers {
		object("customer", &f.Customers[i].UUID)
	}
	for i := range f.Projects {
		object("project", &f.Projects[i].UUID, ref{"customer", &f.Projects[i].CustomerUUID, false})
	}
	for i := range f.Offerings {
		object("offering", &f.Offerings[i].UUID, ref{"customer", &f.Offerings[i].CustomerUUID, false})
	}
	for i := range f.Plans {
		object("plan", &f.Plans[i].UUID, ref{"offering", &f.Plans[i].OfferingUUID, false})
	}
	for i := range f.Resources {
		r := &f.Resources[i]
		object("resource", &r.UUID, ref{"offering", &r.Offering, false}, ref{"project", &r.Project, false}, ref{"plan", &r.Plan, true})
		r.State = cmp.Or(r.State, "OK")
		if !slices.Contains(resourceStates, r.State) {
			errs = append(errs, fmt.Errorf("resource %s: invalid state %q", r.UUID, r.State))
		}
		for j := range r.Team {
			m := &r.Team[j]
			fix("team member", &m.UUID, true)
			m.OfferingUserState = cmp.Or(m.OfferingUserState, "OK")
		}
	}
	for i := range f.Orders {
		o := &f.Orders[i]
		object("order", &o.UUID, ref{"resource", &o.Resource, false}, ref{"plan", &o.Plan, true})
		if !slices.Contains(orderTypes, o.Type) || !slices.Contains(orderStates, o.State) {
			errs = append(errs, fmt.Errorf("order %s: invalid type %q or state %q", o.UUID, o.Type, o.State))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("invalid fixture: %v", errs)
	}
	return nil
}

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

package waldursim

import (
	"bytes"
	"fmt"
	"os"

	"gopkg.in/yaml.v3"
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

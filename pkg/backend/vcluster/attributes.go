package vcluster

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"

	"github.com/sitebus/sitebus/pkg/backend"
)

// AttributeError is a problem with an order's attributes; it is terminal
// (errors.Is(err, backend.ErrInvalid)).
type AttributeError struct {
	Attribute string
	Msg       string
}

func (e *AttributeError) Error() string { return e.Attribute + ": " + e.Msg }

// Is makes every AttributeError a backend.ErrInvalid.
func (e *AttributeError) Is(target error) bool { return target == backend.ErrInvalid }

// Attributes are a create order's attributes. CPU (cores), RAM and
// Storage (GiB) set the host namespace's quota; nil leaves a limit to the
// order's limits.
type Attributes struct {
	Name              string
	CPU, RAM, Storage *float64
	KubernetesVersion string
}

// Limits are the quota limits the attributes give, by component.
func (a Attributes) Limits() map[string]float64 {
	out := map[string]float64{}
	for k, v := range map[string]*float64{ComponentCPU: a.CPU, ComponentRAM: a.RAM, ComponentStorage: a.Storage} {
		if v != nil {
			out[k] = *v
		}
	}
	return out
}

// kubeVersion is a Kubernetes version as its own parser reads one: no
// component with a leading zero ("00.0" is no version).
var kubeVersion = regexp.MustCompile(`^v?(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(\.(0|[1-9][0-9]*))?([-+][0-9A-Za-z.+-]+)?$`)

// DecodeAttributes reads a create order's attributes, collecting every
// problem; unknown attributes are ignored, as Waldur sends the whole form.
func DecodeAttributes(raw json.RawMessage) (Attributes, error) {
	var a Attributes
	m := map[string]any{}
	if t := bytes.TrimSpace(raw); len(t) > 0 && string(t) != "null" {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		if err := dec.Decode(&m); err != nil {
			return a, &AttributeError{Attribute: "attributes", Msg: "not a JSON object: " + err.Error()}
		}
	}
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, &AttributeError{Attribute: key, Msg: fmt.Sprintf(format, args...)})
	}
	str := func(key string, p *string) {
		switch v := m[key].(type) {
		case nil:
		case string:
			*p = v
		default:
			bad(key, "Not a valid string.")
		}
	}
	num := func(key string, p **float64) {
		switch v := m[key].(type) {
		case nil:
		case json.Number:
			f, err := v.Float64()
			if err != nil || math.IsInf(f, 0) || f < 0 {
				bad(key, "Ensure this value is a number greater than or equal to 0.")
				return
			}
			*p = &f
		default:
			bad(key, "A valid number is required.")
		}
	}
	str("name", &a.Name)
	num(ComponentCPU, &a.CPU)
	num(ComponentRAM, &a.RAM)
	num(ComponentStorage, &a.Storage)
	str("kubernetes_version", &a.KubernetesVersion)
	if a.KubernetesVersion != "" && !kubeVersion.MatchString(a.KubernetesVersion) {
		bad("kubernetes_version", "%q is not a Kubernetes version (such as v1.31 or 1.31.2).", a.KubernetesVersion)
	}
	return a, errors.Join(errs...)
}

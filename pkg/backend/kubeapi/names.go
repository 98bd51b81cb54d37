package kubeapi

import (
	"regexp"

	"github.com/sitebus/sitebus/pkg/fault"
)

// MaxNameLen is the longest namespace name (an RFC 1123 label).
const MaxNameLen = 63

var rfc1123Label = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]*[a-z0-9])?$`)

// ValidateName checks that name can be a namespace; what names the object
// in the messages ("Namespace name", "OpenShift project name"), which are
// the Python plugin's and reach Waldur as the order's error.
func ValidateName(what, name string) error {
	if name == "" {
		return fault.Errorf(fault.Invalid, "%s must not be empty", what)
	}
	if len(name) > MaxNameLen {
		return fault.Errorf(fault.Invalid, "%s '%s' exceeds %d characters (%d)", what, name, MaxNameLen, len(name))
	}
	if !rfc1123Label.MatchString(name) {
		return fault.Errorf(fault.Invalid, "%s '%s' is not a valid RFC 1123 label: "+
			"must be lowercase alphanumeric or '-', must start and end with an alphanumeric character", what, name)
	}
	return nil
}

package cloudinit

import (
	"regexp"

	"github.com/sitebus/sitebus/pkg/config"
)

// Keys are the backend_settings keys Decode reads.
var Keys = []string{"cloud_init_template", "node_disk_driver"}

var driverRe = regexp.MustCompile(`^[a-z]{1,8}$`)

// Decode reads cloud_init_template (LoadTemplate: a file path, inline
// text, or empty for the default) and node_disk_driver from d, recording
// problems in d. withVault says whether Vault is configured, so a template
// needing what the site lacks is refused here, before any node is made.
// The Rancher fields come from the Rancher settings; the caller fills
// them in.
func Decode(d *config.SettingsDecoder, withVault bool) Settings {
	var s Settings
	var tmpl string
	d.Str("cloud_init_template", &tmpl)
	d.Str("node_disk_driver", &s.DiskDriver)
	if s.DiskDriver != "" && !driverRe.MatchString(s.DiskDriver) {
		d.Errorf("node_disk_driver", "%q is not a disk device prefix (sd, vd, xvd)", s.DiskDriver)
	}
	t, err := LoadTemplate(tmpl)
	if err == nil && t != nil {
		err = t.Check(withVault)
	}
	if err != nil {
		d.Errorf("cloud_init_template", "%v", err)
		return s
	}
	s.Template = t
	return s
}

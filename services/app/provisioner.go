package app

import (
	"fmt"
	"net/http"

	"github.com/sitebus/sitebus/pkg/backend/rancher"
	"github.com/sitebus/sitebus/pkg/backend/ranchercluster"
	"github.com/sitebus/sitebus/pkg/cloudinit"
	"github.com/sitebus/sitebus/pkg/openstack"
	"github.com/sitebus/sitebus/pkg/telemetry"
	"github.com/sitebus/sitebus/pkg/vault"
	"github.com/sitebus/sitebus/services/provisioner"
)

// clusterBackend reports whether name is the rancher-cluster offering's:
// its orders go to the cluster-provisioner, not to the order service, and
// it has no backend.Backend for the quota, membership and usage services.
func clusterBackend(name string) bool { return name == ranchercluster.Type }

// clusterOfferings are the offerings whose order_processing_backend is
// rancher-cluster, with the clients their sagas use.
func (d *deps) clusterOfferings() (map[string]*provisioner.Offering, error) {
	out := map[string]*provisioner.Offering{}
	for i, o := range d.offerings {
		if !clusterBackend(o.Config.OrderProcessingBackend) {
			continue
		}
		s := d.plan.Offerings[i].RancherCluster
		po, err := d.clusterOffering(o.Config.Name, &s)
		if err != nil {
			return nil, fmt.Errorf("offering %q: %w", o.Config.Name, err)
		}
		po.Waldur = o.Waldur
		out[o.Config.OfferingUUIDHex()] = po
	}
	return out, nil
}

func (d *deps) clusterOffering(name string, s *ranchercluster.Settings) (*provisioner.Offering, error) {
	log := d.log.With("offering", name, "backend", ranchercluster.Type)
	wrap := func(target string) func(http.RoundTripper) http.RoundTripper {
		return func(rt http.RoundTripper) http.RoundTripper {
			return telemetry.InstrumentTransport(rt, target, d.reg, d.tp)
		}
	}
	rc, err := rancher.NewClusterClient(rancher.ClusterOptions{BackendURL: s.BackendURL, AccessKey: s.Username, SecretKey: s.Password,
		VerifyCert: s.VerifyCert, Logger: log, WrapTransport: wrap("rancher")})
	if err != nil {
		return nil, err
	}
	ci := cloudinit.Settings{DiskDriver: s.NodeDiskDriver, RancherURL: s.BackendURL, RancherInsecure: !s.VerifyCert}
	if s.CloudInitTemplate != "" {
		src := "cloud_init_template"
		if s.CloudInitTemplatePath != "" {
			src = s.CloudInitTemplatePath
		}
		if ci.Template, err = cloudinit.ParseTemplate(s.CloudInitTemplate, src); err != nil {
			return nil, err
		}
		if err := ci.Template.Check(s.Vault.Enabled()); err != nil {
			return nil, err
		}
	}
	o := &provisioner.Offering{Name: name, Settings: *s, Rancher: rc, CloudInit: ci,
		// The zones' HTTP clients are built from their clouds' TLS
		// settings (verify, cacert), so they are not wrapped here.
		Cloud: provisioner.NewOpenStack(s, func(c *openstack.Config) { c.Logger = log })}
	if s.ArgoCDKubeconfig != "" {
		if o.ArgoCD, err = provisioner.NewArgoCD(s.ArgoCDKubeconfig.Reveal()); err != nil {
			return nil, err
		}
	}
	if s.Vault.Enabled() {
		vc, err := vault.New(s.Vault)
		if err != nil {
			return nil, err
		}
		o.Vault = vc
	}
	return o, nil
}

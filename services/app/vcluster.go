package app

import (
	"context"
	"fmt"
	"net/http"

	"github.com/sitebus/sitebus/pkg/backend/rancher"
	"github.com/sitebus/sitebus/pkg/backend/vcluster"
	"github.com/sitebus/sitebus/pkg/telemetry"
	"github.com/sitebus/sitebus/services/orderflow"
	"github.com/sitebus/sitebus/services/provisioner"
)

// sagaOrders reports whether the orders of backend name are the
// cluster-provisioner's sagas although the backend is a backend.Backend
// (vcluster): its limits, flags and usage go through the quota and usage
// services as for any backend, its creates and terminates do not take the
// order service's direct path.
func sagaOrders(name string) bool { return name == vcluster.Type }

// vclusterOfferings are the offerings whose order_processing_backend is
// vcluster, with the clients their sagas use.
func (d *deps) vclusterOfferings() (map[string]*provisioner.VClusterOffering, error) {
	out := map[string]*provisioner.VClusterOffering{}
	for i, o := range d.offerings {
		if o.Config.OrderProcessingBackend != vcluster.Type {
			continue
		}
		b, err := d.backends.get(i, vcluster.Type)
		if err != nil {
			return nil, err
		}
		host, ok := b.(*vcluster.Backend)
		if !ok {
			return nil, fmt.Errorf("offering %q: the vcluster backend is a %T", o.Config.Name, b)
		}
		s := host.Settings()
		vo := &provisioner.VClusterOffering{Name: o.Config.Name, Settings: s, Waldur: o.Waldur, Host: host,
			Virtual: provisioner.KubeVirtual{InsecureManifest: !s.VerifyCert}}
		if s.ImportToRancher {
			rc, err := rancher.NewClusterClient(rancher.ClusterOptions{BackendURL: s.BackendURL, AccessKey: s.Username, SecretKey: s.Password,
				VerifyCert: s.VerifyCert, Logger: d.log.With("offering", o.Config.Name, "backend", vcluster.Type),
				WrapTransport: func(rt http.RoundTripper) http.RoundTripper {
					rt = telemetry.InstrumentTransport(rt, "rancher", d.reg, d.tp)
					if d.transport != nil {
						rt = d.transport(rt, "rancher")
					}
					return rt
				}})
			if err != nil {
				return nil, fmt.Errorf("offering %q: %w", o.Config.Name, err)
			}
			vo.Rancher = rc
		}
		out[o.Config.OfferingUUIDHex()] = vo
	}
	return out, nil
}

// vclusterVerbs are the vcluster offering's verbs: create and terminate
// start their sagas; update and restore are not supported yet.
func vclusterVerbs(o *provisioner.VClusterOffering, offeringUUID string) orderflow.Verbs {
	start := func(def string) func(context.Context, *orderflow.Order) (*orderflow.Saga, error) {
		return func(ctx context.Context, ord *orderflow.Order) (*orderflow.Saga, error) {
			in, err := provisioner.VClusterInputOf(ctx, o, offeringUUID, ord.Order)
			if err != nil {
				return nil, err
			}
			return &orderflow.Saga{Definition: def, Input: in}, nil
		}
	}
	return orderflow.Verbs{Kind: vcluster.Type, OnCreate: start(provisioner.VClusterCreate), OnTerminate: start(provisioner.VClusterTerminate)}
}

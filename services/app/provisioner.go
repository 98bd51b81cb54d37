package app

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/sitebus/sitebus/pkg/backend/rancher"
	"github.com/sitebus/sitebus/pkg/backend/ranchercluster"
	"github.com/sitebus/sitebus/pkg/cloudinit"
	"github.com/sitebus/sitebus/pkg/openstack"
	"github.com/sitebus/sitebus/pkg/telemetry"
	"github.com/sitebus/sitebus/pkg/vault"
	"github.com/sitebus/sitebus/pkg/waldur"
	"github.com/sitebus/sitebus/services/orderflow"
	"github.com/sitebus/sitebus/services/provisioner"
)

// clusterBackend reports whether name is the rancher-cluster offering's:
// its orders go to the cluster-provisioner, not to the order service, and
// it has no backend.Backend for the quota, membership and usage services.
func clusterBackend(name string) bool { return name == ranchercluster.Type }

// clusterProvisioner is the cluster-provisioner service: the order
// lifecycle (orderflow) over the rancher-cluster offerings, whose verbs
// start the provisioner's sagas, and the provisioner running them.
func (d *deps) clusterProvisioner(offerings map[string]*provisioner.Offering, vclusters map[string]*provisioner.VClusterOffering) (Service, error) {
	// The verbs need the provisioner, which settles through the flow:
	// the verbs read prov when an order comes, after both are built.
	var prov *provisioner.Service
	verbs := clusterVerbs(func(ctx context.Context, offeringUUID string, order *waldur.Order) (provisioner.Input, error) {
		return prov.Input(ctx, offeringUUID, order)
	})
	limits, err := d.vclusterLimits()
	if err != nil {
		return nil, err
	}
	var fo []orderflow.FlowOffering
	for _, o := range d.offerings {
		if po, ok := offerings[o.Config.OfferingUUIDHex()]; ok {
			fo = append(fo, orderflow.FlowOffering{UUID: o.Config.OfferingUUIDHex(), Name: po.Name, Waldur: o.Waldur, Handler: verbs})
		}
		if vo, ok := vclusters[o.Config.OfferingUUIDHex()]; ok {
			fo = append(fo, orderflow.FlowOffering{UUID: o.Config.OfferingUUIDHex(), Name: vo.Name, Waldur: o.Waldur,
				Handler: vclusterVerbs(vo, o.Config.OfferingUUIDHex(), limits)})
		}
	}
	flow, err := orderflow.NewFlow(d.bus, orderflow.FlowConfig{Name: provisioner.Name, OutcomesConsumer: provisioner.Name + "-outcomes",
		Sagas: provisioner.Definitions(), Owner: d.identity, Logger: d.log, Registerer: d.reg, TracerProvider: d.tp, Offerings: fo})
	if err != nil {
		return nil, err
	}
	prov, err = provisioner.New(d.bus, provisioner.Config{Offerings: offerings, VClusters: vclusters, Orders: flow, Logger: d.log, Registerer: d.reg, TracerProvider: d.tp,
		LeaseTTL: d.cfg.Sitebus.SagaLease, SagaRetention: d.cfg.Sitebus.Streams.SagaRetention, Owner: d.identity, Timeouts: provisioner.Timeouts{Nodes: d.cfg.Sitebus.ClusterReadyTimeout},
		PullPeriod: d.cfg.Sitebus.ClusterPullPeriod, VMConcurrency: d.cfg.Sitebus.ClusterVMConcurrency})
	if err != nil {
		return nil, err
	}
	return &clusterService{flow: flow, prov: prov}, nil
}

// clusterVerbs are the rancher-cluster offering's verbs: each order type
// starts its saga (no Restore: Mastermind's plugin has none either).
// input is the provisioner's Input (read when an order comes).
func clusterVerbs(input func(ctx context.Context, offeringUUID string, order *waldur.Order) (provisioner.Input, error)) orderflow.Verbs {
	start := func(def string) func(context.Context, *orderflow.Order) (*orderflow.Saga, error) {
		return func(ctx context.Context, o *orderflow.Order) (*orderflow.Saga, error) {
			if o.Type == waldur.OrderTypeRestore {
				return nil, orderflow.Unsupported(o, ranchercluster.Type)
			}
			in, err := input(ctx, o.OfferingUUID, o.Order)
			if err != nil {
				return nil, err
			}
			return &orderflow.Saga{Definition: def, Input: in}, nil
		}
	}
	return orderflow.Verbs{Kind: ranchercluster.Type, OnCreate: start(provisioner.ClusterCreate),
		OnUpdate: start(provisioner.ClusterUpdate), OnTerminate: start(provisioner.ClusterTerminate)}
}

// clusterService runs the lifecycle and the provisioner together.
type clusterService struct {
	flow *orderflow.Flow
	prov *provisioner.Service
}

func (c *clusterService) Name() string { return provisioner.Name }

// Run runs both until ctx ends or one of them fails, which stops the other.
func (c *clusterService) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, 2)
	go func() { errs <- c.prov.Run(ctx) }()
	go func() { errs <- c.flow.Run(ctx) }()
	first := <-errs
	cancel()
	return errors.Join(first, <-errs)
}

func (c *clusterService) Ready(ctx context.Context) error {
	return errors.Join(c.prov.Ready(ctx), c.flow.Ready(ctx))
}

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
			rt = telemetry.InstrumentTransport(rt, target, d.reg, d.tp)
			if d.transport != nil {
				rt = d.transport(rt, target)
			}
			return rt
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
		Cloud: provisioner.NewOpenStack(s, func(c *openstack.Config) {
			c.Logger = log
			if d.transport != nil {
				c.WrapTransport = wrap("openstack")
			}
		})}
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

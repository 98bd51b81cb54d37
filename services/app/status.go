package app

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/sitebus/sitebus/pkg/bus"
	"github.com/sitebus/sitebus/pkg/saga"
	"github.com/sitebus/sitebus/services/statuspage"
	"github.com/sitebus/sitebus/services/stompbridge"
)

// HealthChecks runs an offering's health checks for the status page (the
// diagnostics command's checks of Waldur, the backends and Keycloak; the
// STOMP state comes from the running bridge instead). It lives with the
// commands, which import this package, so Run takes it as an option.
type HealthChecks func(ctx context.Context, plan *Plan, op *OfferingPlan) []statuspage.Check

const (
	// statusRefresh is the page's auto-refresh.
	statusRefresh = 15
	// statusPublishPeriod is how often the STOMP state is published.
	statusPublishPeriod = 5 * time.Second
)

func statusOfferings(plan *Plan) []statuspage.Offering {
	var out []statuspage.Offering
	for _, op := range plan.Offerings {
		out = append(out, statuspage.Offering{UUID: op.Config.OfferingUUIDHex(), Name: op.Config.Name})
	}
	return out
}

// statusHandler serves the page of plan's offerings from b's NATS.
func statusHandler(plan *Plan, b *bus.Bus, httpAddr string, log *slog.Logger) (http.Handler, error) {
	// A reader only: it registers nothing and runs nothing.
	sagas, err := saga.New(b.JetStream(), saga.Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return nil, err
	}
	src := statuspage.Sources{Sagas: sagas, Bus: b, JS: b.JetStream()}
	offerings, red := statusOfferings(plan), NewRedactor(plan)
	return statuspage.Handler(statuspage.HandlerConfig{
		Addr: httpAddr, Token: plan.Config.Sitebus.StatusPage.Token.Reveal(), Logger: log,
		Load: func(ctx context.Context) statuspage.View {
			v := statuspage.Load(ctx, src, offerings, red.Clean, statusPublishPeriod, time.Now())
			v.Refresh = statusRefresh
			return v
		},
	}), nil
}

// statusPublisher publishes the health snapshots from the process running
// the bridge (it holds the STOMP sessions); nil when this process runs no
// bridge.
func statusPublisher(plan *Plan, b *bus.Bus, running []Service, checks HealthChecks, identity string, log *slog.Logger) (*statuspage.Publisher, error) {
	var bridge *stompbridge.Bridge
	for _, s := range running {
		if br, ok := s.(*stompbridge.Bridge); ok {
			bridge = br
		}
	}
	if bridge == nil {
		return nil, nil
	}
	cfg := statuspage.PublisherConfig{
		Offerings: statusOfferings(plan), Sessions: bridge.Sessions,
		CheckPeriod: plan.Config.Sitebus.StatusPage.CheckPeriod, PublishPeriod: statusPublishPeriod,
		Redact: NewRedactor(plan).Clean, Identity: identity, Replicas: b.Replicas(), Logger: log,
	}
	if checks != nil {
		cfg.Checks = func(ctx context.Context, i int) []statuspage.Check { return checks(ctx, plan, &plan.Offerings[i]) }
	}
	return statuspage.NewPublisher(b.JetStream(), cfg)
}

// Command waldursim serves the Waldur simulator (see package waldursim) for
// local runs and demos.
//
//	waldursim -listen 127.0.0.1:8080 -fixture e2e/waldursim/testdata/fixture.yaml \
//	  -rabbit-mgmt-url http://127.0.0.1:15672 -rabbit-stomp-addr 127.0.0.1:61613 \
//	  -rabbit-admin-user admin -rabbit-admin-pass secret -demo-interval 10s
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"time"

	"github.com/sitebus/sitebus/e2e/simkit"
	"github.com/sitebus/sitebus/e2e/waldursim"
)

func main() {
	simkit.Main("waldursim", "127.0.0.1:8080", func(fs *flag.FlagSet) simkit.Build {
		fixture := fs.String("fixture", "", "YAML fixture with the initial state (required)")
		mgmtURL := fs.String("rabbit-mgmt-url", "", "RabbitMQ management API base URL; empty disables event publishing")
		stompAddr := fs.String("rabbit-stomp-addr", "127.0.0.1:61613", "RabbitMQ STOMP host:port")
		adminUser := fs.String("rabbit-admin-user", "guest", "RabbitMQ admin user")
		adminPass := fs.String("rabbit-admin-pass", "guest", "RabbitMQ admin password")
		demo := fs.Duration("demo-interval", 0, "when > 0, create a demo order this often")
		return func(ctx context.Context, log *slog.Logger) (simkit.Sim, []any, error) {
			if *fixture == "" {
				return nil, nil, errors.New("-fixture is required")
			}
			fx, err := waldursim.LoadFixture(*fixture)
			if err != nil {
				return nil, nil, err
			}
			cfg := waldursim.Config{Fixture: fx, Logger: log}
			if *mgmtURL != "" {
				cfg.Rabbit = &waldursim.RabbitConfig{MgmtURL: *mgmtURL, STOMPAddr: *stompAddr,
					AdminUser: *adminUser, AdminPass: *adminPass}
			}
			srv, err := waldursim.New(cfg)
			if err != nil {
				return nil, nil, err
			}
			if *demo > 0 {
				go demoOrders(ctx, srv, *demo, log)
			}
			return srv, []any{"api", "/api/", "rabbitmq", *mgmtURL != ""}, nil
		}
	})
}

// demoOrders keeps events flowing for someone watching a local run.
func demoOrders(ctx context.Context, srv *waldursim.Server, every time.Duration, log *slog.Logger) {
	simkit.Every(ctx, every, func(n int) {
		res, err := srv.CreateOrder(ctx, waldursim.CreateOrderRequest{
			ResourceName: fmt.Sprintf("demo-%d", n),
			Limits:       map[string]int{"cpu": 1, "ram": 2},
		})
		if err != nil {
			log.Warn("demo order", "err", err)
			return
		}
		log.Info("demo order created", "order", res.Order.UUID, "resource", res.Resource.Name,
			"events", len(res.Published))
	})
}

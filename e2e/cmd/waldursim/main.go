// Command waldursim serves the Waldur simulator (see package waldursim) for
// local runs and demos.
//
//	waldursim -listen 127.0.0.1:8080 -fixture e2e/waldursim/testdata/fixture.yaml \
//	  -rabbit-mgmt-url http://127.0.0.1:15672 -rabbit-stomp-addr 127.0.0.1:61613 \
//	  -rabbit-admin-user admin -rabbit-admin-pass secret
package main

import (
	"context"
	"errors"
	"flag"
	"log/slog"

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
		return func(_ context.Context, log *slog.Logger) (simkit.Sim, []any, error) {
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
			return srv, []any{"api", "/api/", "rabbitmq", *mgmtURL != ""}, err
		}
	})
}

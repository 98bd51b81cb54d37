// Command waldursim serves the Waldur simulator (see package waldursim) for
// local runs and demos.
//
//	waldursim -listen 127.0.0.1:8080 -fixture e2e/waldursim/testdata/fixture.yaml \
//	  -rabbit-mgmt-url http://127.0.0.1:15672 -rabbit-stomp-addr 127.0.0.1:61613 \
//	  -rabbit-admin-user admin -rabbit-admin-pass secret -demo-interval 10s
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/sitebus/sitebus/e2e/waldursim"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "waldursim:", err)
		os.Exit(1)
	}
}

func run() error {
	listen := flag.String("listen", "127.0.0.1:8080", "address to serve the API on")
	fixture := flag.String("fixture", "", "YAML fixture with the initial state (required)")
	mgmtURL := flag.String("rabbit-mgmt-url", "", "RabbitMQ management API base URL; empty disables event publishing")
	stompAddr := flag.String("rabbit-stomp-addr", "127.0.0.1:61613", "RabbitMQ STOMP host:port")
	adminUser := flag.String("rabbit-admin-user", "guest", "RabbitMQ admin user")
	adminPass := flag.String("rabbit-admin-pass", "guest", "RabbitMQ admin password")
	demo := flag.Duration("demo-interval", 0, "when > 0, create a demo order this often")
	verbose := flag.Bool("v", false, "debug logging")
	flag.Parse()

	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	if *fixture == "" {
		return fmt.Errorf("-fixture is required")
	}
	fx, err := waldursim.LoadFixture(*fixture)
	if err != nil {
		return err
	}
	cfg := waldursim.Config{Fixture: fx, Logger: log}
	if *mgmtURL != "" {
		cfg.Rabbit = &waldursim.RabbitConfig{MgmtURL: *mgmtURL, STOMPAddr: *stompAddr,
			AdminUser: *adminUser, AdminPass: *adminPass}
	}
	srv, err := waldursim.New(cfg)
	if err != nil {
		return err
	}
	if err := srv.Start(*listen); err != nil {
		return err
	}
	defer func() { _ = srv.Close() }()
	log.Info("waldursim listening", "url", srv.URL(), "api", srv.URL()+"/api/", "admin", srv.URL()+"/sim/",
		"rabbitmq", *mgmtURL != "")

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *demo > 0 {
		go demoOrders(ctx, srv, *demo, log)
	}
	<-ctx.Done()
	log.Info("shutting down")
	return nil
}

// demoOrders keeps events flowing for someone watching a local run.
func demoOrders(ctx context.Context, srv *waldursim.Server, every time.Duration, log *slog.Logger) {
	t := time.NewTicker(every)
	defer t.Stop()
	for n := 1; ; n++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		res, err := srv.CreateOrder(ctx, waldursim.CreateOrderRequest{
			ResourceName: fmt.Sprintf("demo-%d", n),
			Limits:       map[string]int{"cpu": 1, "ram": 2},
		})
		if err != nil {
			log.Warn("demo order", "err", err)
			continue
		}
		log.Info("demo order created", "order", res.Order.UUID, "resource", res.Resource.Name,
			"events", len(res.Published))
	}
}

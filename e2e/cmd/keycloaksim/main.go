// Command keycloaksim serves the Keycloak Admin REST simulator (see package
// keycloaksim) for local runs and the Tilt Kubernetes mode: realm waldur
// with the fixture's offering users, admin/admin in master, as sitebus-dev
// serves it in-process.
//
//	keycloaksim -listen 127.0.0.1:8180 -fixture e2e/waldursim/testdata/fixture.yaml
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/sitebus/sitebus/e2e/keycloaksim"
	"github.com/sitebus/sitebus/e2e/waldursim"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "keycloaksim:", err)
		os.Exit(1)
	}
}

func run() error {
	listen := flag.String("listen", "127.0.0.1:8180", "address to serve the API on (plain HTTP)")
	fixture := flag.String("fixture", "", "Waldur simulator fixture whose offering users become users of the realm (optional)")
	realm := flag.String("realm", "waldur", "realm of the users")
	adminUser := flag.String("admin-user", "admin", "admin user of the master realm")
	adminPass := flag.String("admin-pass", "admin", "password of the admin user")
	verbose := flag.Bool("v", false, "debug logging")
	flag.Parse()

	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	var users []keycloaksim.User
	if *fixture != "" {
		fx, err := waldursim.LoadFixture(*fixture)
		if err != nil {
			return err
		}
		users = offeringUsers(fx)
	}
	srv, err := keycloaksim.New(keycloaksim.Config{
		AdminUsername: *adminUser, AdminPassword: *adminPass,
		Realms: []keycloaksim.Realm{{Name: *realm, Users: users}},
		Logger: log,
	})
	if err != nil {
		return err
	}
	if err := srv.Start(*listen); err != nil {
		return err
	}
	defer func() { _ = srv.Close() }()
	log.Info("keycloaksim listening", "url", srv.URL(), "realm", *realm, "users", len(users))

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	log.Info("shutting down")
	return nil
}

// offeringUsers are the fixture teams' offering users, once each: the
// usernames sitebus looks up when it adds members to access groups.
func offeringUsers(fx *waldursim.Fixture) []keycloaksim.User {
	var users []keycloaksim.User
	seen := map[string]bool{}
	for _, r := range fx.Resources {
		for _, m := range r.Team {
			if m.OfferingUserUsername != "" && !seen[m.OfferingUserUsername] {
				seen[m.OfferingUserUsername] = true
				users = append(users, keycloaksim.User{Username: m.OfferingUserUsername, Email: m.Email})
			}
		}
	}
	return users
}

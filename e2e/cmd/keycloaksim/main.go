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
	"log/slog"

	"github.com/sitebus/sitebus/e2e/keycloaksim"
	"github.com/sitebus/sitebus/e2e/simkit"
	"github.com/sitebus/sitebus/e2e/waldursim"
)

func main() {
	simkit.Main("keycloaksim", "127.0.0.1:8180", func(fs *flag.FlagSet) simkit.Build {
		fixture := fs.String("fixture", "", "Waldur simulator fixture whose offering users become users of the realm (optional)")
		return func(_ context.Context, log *slog.Logger) (simkit.Sim, []any, error) {
			var users []keycloaksim.User
			if *fixture != "" {
				fx, err := waldursim.LoadFixture(*fixture)
				if err != nil {
					return nil, nil, err
				}
				users = keycloaksim.OfferingUsers(fx)
			}
			srv, err := keycloaksim.New(keycloaksim.Config{Realms: []keycloaksim.Realm{{Name: "waldur", Users: users}}, Logger: log})
			return srv, []any{"realm", "waldur", "users", len(users)}, err
		}
	})
}

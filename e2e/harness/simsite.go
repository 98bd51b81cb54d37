package harness

import (
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/sitebus/sitebus/e2e/rabbitmq"
	"github.com/sitebus/sitebus/e2e/waldursim"
)

// FixturePath is the simulator's standard fixture in this checkout.
func FixturePath() (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "e2e", "waldursim", "testdata", "fixture.yaml"), nil
}

// LoadFixture reads the simulator's standard fixture (FixturePath); each
// call returns a fresh copy for the caller to change.
func LoadFixture() (*waldursim.Fixture, error) {
	path, err := FixturePath()
	if err != nil {
		return nil, err
	}
	fx, err := waldursim.LoadFixture(path)
	if err != nil {
		return nil, fmt.Errorf("load fixture %s: %w", path, err)
	}
	return fx, nil
}

// Fixture is LoadFixture for a test: a failure ends it.
func Fixture(t testing.TB) *waldursim.Fixture {
	t.Helper()
	fx, err := LoadFixture()
	if err != nil {
		t.Fatal(err)
	}
	return fx
}

// StartSimulator serves a Waldur simulator seeded from fx on addr
// ("127.0.0.1:0" for any port), publishing its events to broker. The
// caller must Close it.
func StartSimulator(addr string, fx *waldursim.Fixture, broker *rabbitmq.Broker, log *slog.Logger) (*waldursim.Server, error) {
	sim, err := waldursim.New(waldursim.Config{
		Fixture: fx,
		Logger:  log,
		Rabbit: &waldursim.RabbitConfig{MgmtURL: broker.MgmtURL(), STOMPAddr: broker.STOMPAddr(),
			AdminUser: broker.AdminUser, AdminPass: broker.AdminPass},
	})
	if err != nil {
		return nil, fmt.Errorf("waldur simulator: %w", err)
	}
	if err := sim.Start(addr); err != nil {
		return nil, fmt.Errorf("waldur simulator on %s: %w", addr, err)
	}
	return sim, nil
}

// FixtureSite is the configuration of a sitebus serving the fixture's
// (first) offering with its (first) user's token, against sim and broker.
// The broker vhost of its subscriptions is that user's UUID.
func FixtureSite(fx *waldursim.Fixture, sim *waldursim.Server, broker *rabbitmq.Broker) (SiteConfig, error) {
	if len(fx.Users) == 0 || len(fx.Offerings) == 0 {
		return SiteConfig{}, errors.New("fixture needs a user and an offering")
	}
	return SiteConfig{
		WaldurURL:    sim.URL(),
		Token:        fx.Users[0].Token,
		OfferingUUID: fx.Offerings[0].UUID,
		WebSTOMPAddr: broker.WebSTOMPAddr(),
		WebSTOMPPath: rabbitmq.WebSTOMPPath,
	}, nil
}

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/sitebus/sitebus/e2e/harness"
	"github.com/sitebus/sitebus/e2e/kube"
	"github.com/sitebus/sitebus/e2e/rabbitmq"
	"github.com/sitebus/sitebus/e2e/testenv"
	"github.com/sitebus/sitebus/e2e/waldursim"
	"github.com/sitebus/sitebus/pkg/vault/vaulttest"
)

// TestDemoCreatesAndTerminatesAManagedCluster runs the whole local site
// (as `make run` does, on free ports) and waits for the demo's first
// rancher-cluster create to be done (sitebus built the cluster on the
// OpenStack simulator and its VMs registered with the Rancher simulator),
// then for its terminate to be done too, so demo clusters do not pile up;
// and for the demo's virtual cluster create to be done (sitebus imported
// the second control plane into the Rancher simulator and applied the
// agent into it). With Vault the nodes read their token from it; without,
// the token is in their user_data.
func TestDemoCreatesAndTerminatesAManagedCluster(t *testing.T) {
	rabbitmq.Require(t)
	kube.Require(t)
	// Built once for both runs (harness.SitebusBinary keeps it in the
	// cache, shared with the other e2e packages of this checkout).
	bin, err := harness.SitebusBinary()
	if err != nil {
		t.Fatalf("build sitebus: %v", err)
	}
	for _, tc := range []struct {
		name  string
		vault bool
	}{
		{"with Vault", true},
		{"without Vault", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.vault {
				_, err := vaulttest.Binary()
				testenv.Require(t, "Vault server", err)
			} else {
				t.Setenv("SITEBUS_VAULT_BIN", filepath.Join(t.TempDir(), "no-vault"))
			}
			demoCluster(t, bin)
		})
	}
}

func demoCluster(t *testing.T, bin string) {
	ports, err := testenv.FreePorts(7)
	if err != nil {
		t.Fatal(err)
	}
	addr := func(i int) string { return "127.0.0.1:" + strconv.Itoa(ports[i]) }
	o := options{
		sitebus:  bin,
		httpAddr: addr(0), natsListen: addr(1), simListen: addr(2), keycloakListen: addr(3),
		rancher: true, rancherListen: addr(4), clusters: true, osListen: addr(5), vaultListen: addr(6), vclusters: true,
		demoInterval: 500 * time.Millisecond,
	}
	fx, err := harness.LoadFixture()
	if err != nil {
		t.Fatal(err)
	}
	token := fx.Users[0].Token

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, o, slog.New(slog.NewTextHandler(os.Stderr, nil))) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("sitebus-dev: %v", err)
		}
	})

	// Building sitebus, RabbitMQ, the control plane and a cluster's nine
	// VMs: minutes on a loaded machine, so a generous bound.
	deadline := time.Now().Add(6 * time.Minute)
	var last []waldursim.APIOrder
	var lastVC []waldursim.APIOrder
	var created string // the first cluster's resource, once its create is done
	var terminated, vclusterDone bool
	for time.Now().Before(deadline) {
		select {
		case err := <-done:
			done <- err // for the cleanup
			t.Fatalf("sitebus-dev ended before a cluster was done: %v", err)
		case <-time.After(time.Second):
		}
		orders, err := offeringOrders(ctx, "http://"+o.simListen, token, clusterOfferingUUID)
		if err != nil {
			continue // the simulator is not up yet
		}
		last = orders
		for _, ord := range orders {
			switch {
			case ord.State == "erred":
				t.Fatalf("demo cluster %s order %s erred: %s", ord.Type, ord.UUID, ord.ErrorMessage)
			case ord.State != "done":
			case ord.Type == "Create" && created == "":
				created = ord.MarketplaceResourceUUID
			case ord.Type == "Terminate" && created != "" && ord.MarketplaceResourceUUID == created:
				terminated = true
			}
		}
		if lastVC, err = offeringOrders(ctx, "http://"+o.simListen, token, vclusterOfferingUUID); err != nil {
			continue
		}
		for _, ord := range lastVC {
			switch {
			case ord.State == "erred":
				t.Fatalf("demo virtual cluster %s order %s erred: %s", ord.Type, ord.UUID, ord.ErrorMessage)
			case ord.Type == "Create" && ord.State == "done":
				vclusterDone = true
			}
		}
		if terminated && vclusterDone {
			return
		}
	}
	t.Fatalf("want the first cluster created (resource %q) and terminated (%v), and the virtual cluster created (%v); cluster orders: %+v; virtual cluster orders: %+v",
		created, terminated, vclusterDone, last, lastVC)
}

// offeringOrders lists an offering's orders through the Waldur simulator's
// API, as sitebus sees them.
func offeringOrders(ctx context.Context, simURL, token, offeringUUID string) ([]waldursim.APIOrder, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, simURL+"/api/marketplace-orders/?offering_uuid="+offeringUUID, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Token "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("list orders: %s", resp.Status)
	}
	var orders []waldursim.APIOrder
	if err := json.NewDecoder(resp.Body).Decode(&orders); err != nil {
		return nil, err
	}
	return orders, nil
}

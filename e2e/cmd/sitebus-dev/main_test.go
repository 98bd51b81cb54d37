package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/sitebus/sitebus/e2e/kube"
	"github.com/sitebus/sitebus/e2e/rabbitmq"
	"github.com/sitebus/sitebus/e2e/testenv"
	"github.com/sitebus/sitebus/e2e/waldursim"
)

// TestDemoCreatesAManagedClusterThatIsDone runs the whole local site (as
// `make run` does, on free ports) and waits for the demo's first
// rancher-cluster order to be done: sitebus built the cluster on the
// OpenStack simulator and its VMs registered with the Rancher simulator
// (through Vault when the binary is cached, else with the token in
// user_data).
func TestDemoCreatesAManagedClusterThatIsDone(t *testing.T) {
	rabbitmq.Require(t)
	kube.Require(t)
	ports, err := testenv.FreePorts(7)
	if err != nil {
		t.Fatal(err)
	}
	addr := func(i int) string { return "127.0.0.1:" + strconv.Itoa(ports[i]) }
	o := options{
		httpAddr: addr(0), natsListen: addr(1), simListen: addr(2), keycloakListen: addr(3),
		rancher: true, rancherListen: addr(4), clusters: true, osListen: addr(5), vaultListen: addr(6),
		demoInterval: 500 * time.Millisecond,
	}
	fx, err := loadFixture()
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
	for time.Now().Before(deadline) {
		select {
		case err := <-done:
			done <- err // for the cleanup
			t.Fatalf("sitebus-dev ended before a cluster was done: %v", err)
		case <-time.After(time.Second):
		}
		orders, err := clusterOrders(ctx, "http://"+o.simListen, token)
		if err != nil {
			continue // the simulator is not up yet
		}
		last = orders
		for _, ord := range orders {
			if ord.Type != "Create" {
				continue
			}
			switch ord.State {
			case "done":
				return
			case "erred":
				t.Fatalf("demo cluster order %s erred: %s", ord.UUID, ord.ErrorMessage)
			}
		}
	}
	t.Fatalf("no rancher-cluster create order done; orders: %+v", last)
}

// clusterOrders lists the rancher-cluster offering's orders through the
// Waldur simulator's API, as sitebus sees them.
func clusterOrders(ctx context.Context, simURL, token string) ([]waldursim.APIOrder, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, simURL+"/api/marketplace-orders/?offering_uuid="+clusterOfferingUUID, nil)
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

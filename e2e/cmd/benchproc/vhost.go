package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/sitebus/sitebus/e2e/rabbitmq"
)

// The simulator puts every subscription of a user in one vhost named after
// that user, so every sitebus instance benchproc starts shares the fixture
// user's vhost on the one broker. If the simulator's PUT /api/vhosts is
// cut off half-way (its request context ends when the sitebus that asked
// for the subscription is stopped), RabbitMQ 3.x is left with a vhost
// that exists but whose supervisor never started: every later PUT is a
// no-op and every queue declare fails with vhost_supervisor_not_running.
// So benchproc creates the vhost itself, once, before any sitebus runs,
// and checks that it is running.

// fixtureVhost is the vhost the simulator uses for the fixture's first user.
func fixtureVhost(userUUID string) string {
	return strings.ToLower(strings.ReplaceAll(userUUID, "-", ""))
}

// ensureVhost creates vhost and waits until it runs on every node.
func ensureVhost(ctx context.Context, broker *rabbitmq.Broker, vhost string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := broker.Mgmt().PutVhost(ctx, vhost); err != nil {
		return fmt.Errorf("create vhost %s: %w", vhost, err)
	}
	for {
		state, err := vhostState(ctx, broker, vhost)
		if err == nil && state == "running" {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("vhost %s not running (state %q, err %v): %w", vhost, state, err, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// vhostState is "running" when the vhost runs on every node, else the
// per-node states (e.g. "sitebus-…@localhost=stopped").
func vhostState(ctx context.Context, broker *rabbitmq.Broker, vhost string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, broker.MgmtURL()+"/api/vhosts/"+url.PathEscape(vhost), nil)
	if err != nil {
		return "", err
	}
	req.SetBasicAuth(broker.AdminUser, broker.AdminPass)
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET /api/vhosts/%s: HTTP %d: %s", vhost, resp.StatusCode, strings.TrimSpace(string(body)))
	}
	var v struct {
		ClusterState map[string]string `json:"cluster_state"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		return "", fmt.Errorf("GET /api/vhosts/%s: %w", vhost, err)
	}
	if len(v.ClusterState) == 0 {
		return "unknown", nil
	}
	var notRunning []string
	for node, st := range v.ClusterState {
		if st != "running" {
			notRunning = append(notRunning, node+"="+st)
		}
	}
	if len(notRunning) > 0 {
		return strings.Join(notRunning, ", "), nil
	}
	return "running", nil
}

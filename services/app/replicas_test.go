package app

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sitebus/sitebus/pkg/bus/bustest"
	"github.com/sitebus/sitebus/pkg/config"
)

func replicasConfig(t *testing.T, natsURL string, replicas int) *config.Root {
	t.Helper()
	cfg, err := config.Parse(fmt.Appendf(nil, `offerings:
  - name: k8s
    waldur_api_url: https://waldur.example.com/api/
    waldur_api_token: t
    waldur_offering_uuid: 7f3a1c2e-9b4d-4e8f-a1b2-c3d4e5f6a7b8
    backend_type: k8s-ut-namespace
sitebus:
  nats_url: %q
  streams:
    replicas: %d
`, natsURL, replicas), "config.yaml", func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// closedURL is a loopback URL nothing listens on: port 1 is privileged and
// unused, whereas a port just released could be taken meanwhile by a
// server of a test package running in parallel.
func closedURL(*testing.T) string { return "nats://127.0.0.1:1" }

func TestCheckReplicas(t *testing.T) {
	single := bustest.Server(t)
	cluster := bustest.StartCluster(t, 3)
	closed := closedURL(t)
	tests := map[string]struct {
		natsURL  string
		replicas int
		wantNote string
		wantErr  string
	}{
		"one replica on the embedded server": {replicas: 1, wantNote: "streams: 1 replica (embedded NATS server)"},
		"three replicas on the embedded server are refused": {
			replicas: 3,
			wantErr:  "config.yaml:10: sitebus.streams.replicas: 3 replicas need a JetStream cluster of at least 3 servers, and the embedded NATS server (nats_url empty) is one: set replicas to 1, or nats_url (--nats-url) to a cluster",
		},
		"three replicas on a server that is not clustered are refused": {
			natsURL: single.ClientURL(), replicas: 3,
			wantErr: "config.yaml:10: sitebus.streams.replicas: 3 replicas need a JetStream cluster of at least 3 servers, and the NATS server at nats_url is not clustered",
		},
		"three replicas on a three-node cluster": {
			natsURL: cluster.Servers[1].ClientURL(), replicas: 3,
			wantNote: `streams: 3 replica(s); NATS cluster "sitebus-test" lists 3 servers`,
		},
		"five replicas on a three-node cluster are refused": {
			natsURL: cluster.Servers[0].ClientURL(), replicas: 5,
			wantErr: `config.yaml:10: sitebus.streams.replicas: 5 replicas need a JetStream cluster of at least 5 servers, and NATS cluster "sitebus-test" lists 3 (a server that is down is not listed)`,
		},
		"an unreachable server is reported, not refused": {
			natsURL: closed, replicas: 3,
			wantNote: "streams: 3 replica(s); not checked against the cluster: NATS not reachable: dial tcp",
		},
		"the first server that answers of a list is asked": {
			natsURL: closed + "," + cluster.Servers[2].ClientURL(), replicas: 3,
			wantNote: `NATS cluster "sitebus-test" lists 3 servers`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			// Only a guard: every case answers (or is refused) at once.
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			note, err := CheckReplicas(ctx, replicasConfig(t, tc.natsURL, tc.replicas))
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error %v\nwant %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(note, tc.wantNote) {
				t.Errorf("note %q, want it to contain %q", note, tc.wantNote)
			}
		})
	}
}

package cli

import (
	"strings"
	"testing"

	"github.com/sitebus/sitebus/pkg/bus/bustest"
)

func TestConfigCheckAndRunOnStreamReplicas(t *testing.T) {
	single := bustest.Server(t)
	cluster := bustest.StartCluster(t, 3)
	tests := map[string]struct {
		lines    []string
		args     []string // more config check arguments
		wantOut  string
		wantErr  string // config check's and run's error
		checkRun bool   // run must refuse it with the same message
	}{
		"one replica with the embedded server": {
			lines:   withOffering(),
			wantOut: "streams: 1 replica (embedded NATS server)",
		},
		"three replicas with the embedded server are refused by check and run alike": {
			lines:    withOffering("sitebus:", "  streams: {replicas: 3}"),
			wantErr:  `config.yaml:17: sitebus.streams.replicas: 3 replicas need a JetStream cluster of at least 3 servers, and the embedded NATS server (nats_url empty) is one`,
			checkRun: true,
		},
		"three replicas on a three-node cluster given by --nats-url": {
			lines:   withOffering("sitebus:", "  streams: {replicas: 3}"),
			args:    []string{"--nats-url", cluster.URL()},
			wantOut: `streams: 3 replica(s); NATS cluster "sitebus-test" lists 3 servers`,
		},
		"three replicas on a server that is not clustered are refused": {
			lines:   withOffering("sitebus:", "  nats_url: "+single.ClientURL(), "  streams: {replicas: 3}"),
			wantErr: `config.yaml:18: sitebus.streams.replicas: 3 replicas need a JetStream cluster of at least 3 servers, and the NATS server at nats_url is not clustered`,
		},
		"an explicit zero is refused at its key": {
			lines:    withOffering("sitebus:", "  streams: {replicas: 0}"),
			wantErr:  `config.yaml:17: sitebus.streams.replicas: 0 is not a replica count: 1 to 5`,
			checkRun: true,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			path := writeConfig(t, tc.lines...)
			out, _, checkErr := execute(t, append([]string{"config", "check", "-c", path}, tc.args...)...)
			if tc.wantErr == "" {
				if checkErr != nil {
					t.Fatal(checkErr)
				}
				if !strings.Contains(out, tc.wantOut) {
					t.Errorf("config check output lacks %q:\n%s", tc.wantOut, out)
				}
				return
			}
			if checkErr == nil || !strings.Contains(checkErr.Error(), strings.Replace(tc.wantErr, "config.yaml", path, 1)) {
				t.Fatalf("config check: %v\nwant: %s", checkErr, tc.wantErr)
			}
			if tc.checkRun {
				_, _, runErr := execute(t, "run", "-c", path, "--data-dir", t.TempDir(), "--http-addr", "127.0.0.1:0")
				if runErr == nil || runErr.Error() != checkErr.Error() {
					t.Errorf("run and check differ:\n run: %v\ncheck: %v", runErr, checkErr)
				}
			}
		})
	}
}

// With an external server, run asks JetStream: a count it cannot place
// stops run at start, naming the key, with the server's own error.
func TestRunFailsAtStartWhenJetStreamCannotPlaceTheReplicas(t *testing.T) {
	single := bustest.Server(t)
	cluster := bustest.StartCluster(t, 3)
	tests := map[string]struct {
		natsURL   string
		replicas  string
		serverErr string
	}{
		"three replicas on a server that is not clustered": {single.ClientURL(), "3", "replicas > 1 not supported in non-clustered mode"},
		"five replicas on a three-node cluster":            {cluster.URL(), "5", "no suitable peers for placement"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			path := writeConfig(t, withOffering("sitebus:", "  streams: {replicas: "+tc.replicas+"}")...)
			_, _, err := execute(t, "run", "-c", path, "--nats-url", tc.natsURL, "--data-dir", t.TempDir(), "--http-addr", "127.0.0.1:0")
			want := path + ":17: sitebus.streams.replicas: JetStream cannot place " + tc.replicas + " replicas"
			if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), tc.serverErr) {
				t.Fatalf("run: %v\nwant %q and the server's %q", err, want, tc.serverErr)
			}
		})
	}
}

package config

import "testing"

func TestStreamReplicas(t *testing.T) {
	tests := map[string]struct {
		lines   []string
		want    int
		wantErr string
	}{
		"missing key takes one replica": {
			lines: []string{"sitebus:", "  streams: {events_max_age: 24h}"},
			want:  1,
		},
		"missing section takes one replica": {want: 1},
		"missing key with an external server takes one replica too": {
			lines: []string{"sitebus:", "  nats_url: nats://nats:4222"},
			want:  1,
		},
		"explicit three is kept": {
			lines: []string{"sitebus:", "  nats_url: nats://nats:4222", "  streams:", "    replicas: 3"},
			want:  3,
		},
		"explicit zero is refused, not defaulted": {
			lines:   []string{"sitebus:", "  streams:", "    replicas: 0"},
			wantErr: `config.yaml:9: sitebus.streams.replicas: 0 is not a replica count: 1 to 5 (copies of each stream on as many JetStream servers)`,
		},
		"more than five is refused": {
			lines:   []string{"sitebus:", "  streams:", "    replicas: 6"},
			wantErr: `config.yaml:9: sitebus.streams.replicas: 6 is not a replica count: 1 to 5 (copies of each stream on as many JetStream servers)`,
		},
		"negative is refused": {
			lines:   []string{"sitebus:", "  streams:", "    replicas: -1"},
			wantErr: `config.yaml:9: sitebus.streams.replicas: -1 is not a replica count: 1 to 5 (copies of each stream on as many JetStream servers)`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r, err := Parse(conf(nil, tc.lines...), "config.yaml", noEnv)
			if tc.wantErr != "" {
				wantProblems(t, err, tc.wantErr)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			eq(t, "replicas", r.Sitebus.Streams.Replicas, tc.want)
		})
	}
}

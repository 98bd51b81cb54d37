package main

import (
	"testing"

	"github.com/sitebus/sitebus/e2e/openstacksim"
)

func TestParseFlavor(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want openstacksim.Flavor
		err  bool
	}{
		{in: "f1:managed_rancher_server:4:8192:40", want: openstacksim.Flavor{ID: "f1", Name: "managed_rancher_server", VCPUs: 4, RAM: 8192, Disk: 40}},
		{in: "f1:small:1:2048", err: true},
		{in: "f1:small:one:2048:20", err: true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := parseFlavor(tc.in)
			if (err != nil) != tc.err || got != tc.want {
				t.Fatalf("parseFlavor(%q) = %+v, %v", tc.in, got, err)
			}
		})
	}
}

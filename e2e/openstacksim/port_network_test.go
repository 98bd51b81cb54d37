package openstacksim_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/gophercloud/gophercloud/v2"
)

// TestPortWithoutNetworkIsRefused: as Neutron, a port needs network_id
// even when its fixed IP names a subnet (a client that counts on the
// subnet would work here and fail on a real cloud).
func TestPortWithoutNetworkIsRefused(t *testing.T) {
	_, _, c := simWithTenant(t, "port-net")
	n, sub := tenantNet(t, c)
	// gophercloud's CreateOpts refuses this before sending: raw, as
	// another client could send it.
	body := map[string]any{"port": map[string]any{"fixed_ips": []map[string]string{{"subnet_id": sub.ID}}}}
	_, err := c.network.Post(ctxT(t), c.network.ServiceURL("ports"), body, nil, nil)
	wantCode(t, err, http.StatusBadRequest)
	var e gophercloud.ErrUnexpectedResponseCode
	if !asErr(err, &e) || !strings.Contains(string(e.Body), "network_id") {
		t.Errorf("refusal %v does not name network_id", err)
	}
	if _, err := portAt(t, c, n, sub, ""); err != nil {
		t.Errorf("the same port with its network: %v", err)
	}
}

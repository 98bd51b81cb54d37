package openstack

import (
	"context"

	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
)

// OwnedServers lists owner's servers in the client's project, by id, in
// one call: a periodic pass over many clusters reads each project once
// instead of each server.
func (c *Client) OwnedServers(ctx context.Context, owner Owner) (map[string]Server, error) {
	all, err := list(ctx, "list servers", "", servers.List(c.compute, servers.ListOpts{}), servers.ExtractServers)
	if err != nil {
		return nil, err
	}
	out := map[string]Server{}
	for i := range all {
		if c.ownsServer(owner, &all[i]) {
			out[all[i].ID] = c.serverOf(ctx, &all[i])
		}
	}
	return out, nil
}

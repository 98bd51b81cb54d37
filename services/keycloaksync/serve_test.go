package keycloaksync

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/sitebus/sitebus/pkg/bus"
	"github.com/sitebus/sitebus/pkg/fault"
	sitebusv1 "github.com/sitebus/sitebus/pkg/gen/sitebus/v1"
	"github.com/sitebus/sitebus/pkg/keycloak"
	"github.com/sitebus/sitebus/pkg/keycloak/keycloakfake"
)

// TestCommandsOverTheBus sends commands as the other services do
// (bus.Call on cmd.keycloak-sync.<command>) and checks what each error
// class of Keycloak makes of them: an outage is retried until Keycloak
// answers, or given up after MaxDeliver attempts as a failure the caller
// may send again; a refusal is the command's final answer at once.
func TestCommandsOverTheBus(t *testing.T) {
	e := newEnv(t)
	e.run(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	count := func(cmd, outcome string) float64 {
		return testutil.ToFloat64(e.s.metrics.commands.WithLabelValues(cmd, outcome))
	}

	// Keycloak down for one call: the command is redelivered and succeeds.
	e.site.FailOnce("FindGroup", keycloakfake.Error("find group", 503))
	var ensured sitebusv1.EnsureGroupsResponse
	if err := e.b.Call(ctx, Name, CmdEnsureGroups, &sitebusv1.EnsureGroupsRequest{OfferingUuid: offA,
		Groups: []*sitebusv1.GroupSpec{{Name: "ns_alpha_admin"}}}, &ensured, bus.WithKey("t:ensure")); err != nil {
		t.Fatalf("ensure-groups through an outage: %v", err)
	}
	if len(ensured.Groups) != 1 || !ensured.Groups[0].Created {
		t.Errorf("ensured %v", ensured.Groups)
	}
	if count(CmdEnsureGroups, "retry") != 1 || count(CmdEnsureGroups, "ok") != 1 {
		t.Errorf("ensure-groups outcomes: retry %v, ok %v", count(CmdEnsureGroups, "retry"), count(CmdEnsureGroups, "ok"))
	}

	// Keycloak down throughout: given up after MaxDeliver, retryable.
	e.site.SetFail("Members", keycloakfake.Error("list members", 502))
	err := e.b.Call(ctx, Name, CmdSetGroupMembers, &sitebusv1.SetGroupMembersRequest{OfferingUuid: offA,
		Group: &sitebusv1.GroupRef{Name: "ns_alpha_admin"}}, &sitebusv1.SetGroupMembersResponse{}, bus.WithKey("t:set"))
	var remote *bus.RemoteError
	if !errors.As(err, &remote) || fault.IsTerminal(err) || remote.Attempts != 3 || !strings.Contains(err.Error(), "HTTP 502") {
		t.Errorf("set-group-members while Keycloak is down: %v, want a retryable failure after 3 attempts", err)
	}
	e.site.SetFail("Members", nil)

	// Refusals are final at the first attempt.
	e.site.AddGroup("admins", "", "")
	err = e.b.Call(ctx, Name, CmdDeleteGroups, &sitebusv1.DeleteGroupsRequest{OfferingUuid: offA,
		Groups: []*sitebusv1.GroupRef{{Name: "admins"}}}, &sitebusv1.DeleteGroupsResponse{}, bus.WithKey("t:delete"))
	if !fault.IsTerminal(err) || !strings.Contains(err.Error(), "managed_by") {
		t.Errorf("delete-groups of a foreign group: %v, want a terminal refusal", err)
	}
	e.site.SetFail("FindUser", keycloak.CredentialsError(401))
	err = e.b.Call(ctx, Name, CmdAddMember, &sitebusv1.AddMemberRequest{OfferingUuid: offA,
		Group: &sitebusv1.GroupRef{Name: "ns_alpha_admin"}, User: &sitebusv1.UserRef{Ref: "alice"}}, &sitebusv1.AddMemberResponse{}, bus.WithKey("t:add"))
	if !fault.IsTerminal(err) || !errors.As(err, &remote) || remote.Attempts != 1 {
		t.Errorf("add-member with credentials refused: %v, want a terminal failure at the first attempt", err)
	}
	if count(CmdDeleteGroups, "terminal") != 1 || count(CmdAddMember, "terminal") != 1 {
		t.Errorf("terminal outcomes not counted")
	}
	if err := e.s.Ready(ctx); err != nil {
		t.Errorf("ready: %v", err)
	}
}

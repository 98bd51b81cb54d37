package contract

import sitebusv1 "github.com/sitebus/sitebus/pkg/gen/sitebus/v1"

// KeycloakSync is the keycloak-sync service: the only writer to Keycloak.
const KeycloakSync = "keycloak-sync"

// Command names of keycloak-sync.
const (
	CmdEnsureGroups    = "ensure-groups"
	CmdDeleteGroups    = "delete-groups"
	CmdSetGroupMembers = "set-group-members"
	CmdAddMember       = "add-member"
	CmdRemoveMember    = "remove-member"
	CmdListMembers     = "list-members"
)

// The commands of keycloak-sync.
var (
	EnsureGroups    = Command[*sitebusv1.EnsureGroupsRequest, *sitebusv1.EnsureGroupsResponse]{KeycloakSync, CmdEnsureGroups}
	DeleteGroups    = Command[*sitebusv1.DeleteGroupsRequest, *sitebusv1.DeleteGroupsResponse]{KeycloakSync, CmdDeleteGroups}
	SetGroupMembers = Command[*sitebusv1.SetGroupMembersRequest, *sitebusv1.SetGroupMembersResponse]{KeycloakSync, CmdSetGroupMembers}
	AddMember       = Command[*sitebusv1.AddMemberRequest, *sitebusv1.AddMemberResponse]{KeycloakSync, CmdAddMember}
	RemoveMember    = Command[*sitebusv1.RemoveMemberRequest, *sitebusv1.RemoveMemberResponse]{KeycloakSync, CmdRemoveMember}
	ListMembers     = Command[*sitebusv1.ListMembersRequest, *sitebusv1.ListMembersResponse]{KeycloakSync, CmdListMembers}
)

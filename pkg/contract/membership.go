package contract

import sitebusv1 "github.com/sitebus/sitebus/pkg/gen/sitebus/v1"

// Membership is the membership service: who has access to each resource.
const Membership = "membership"

// Command names of membership.
const (
	CmdSyncResource = "sync-resource"
	// CmdSyncCreated is sync-resource sent by the team step of
	// rancher-project-create: the project and its group binding were made
	// by the saga's earlier steps, so membership does not look them up or
	// bind again.
	CmdSyncCreated = "sync-created-resource"
)

// The commands of membership.
var (
	// SyncResource applies a resource's team from Waldur to its object.
	SyncResource = Command[*sitebusv1.SyncResourceRequest, *sitebusv1.SyncResourceResponse]{Membership, CmdSyncResource}
	// SyncCreated is SyncResource for a Rancher project a saga just made.
	SyncCreated = Command[*sitebusv1.SyncResourceRequest, *sitebusv1.SyncResourceResponse]{Membership, CmdSyncCreated}
)

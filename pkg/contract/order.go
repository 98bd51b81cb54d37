package contract

import sitebusv1 "github.com/sitebus/sitebus/pkg/gen/sitebus/v1"

// Order is the order service (services/orderflow): it alone changes the
// platform objects of Waldur resources and settles orders in Waldur.
const Order = "order"

// Command names of the order service: the saga steps it owns.
const (
	CmdCreateObject = "create-object"
	CmdDeleteObject = "delete-object"
	CmdSettleOrder  = "settle-order"
	CmdBindGroup    = "bind-group"
	CmdUnbindGroup  = "unbind-group"
)

// The commands of the order service.
var (
	CreateObject = Command[*sitebusv1.CreateObjectRequest, *sitebusv1.CreateObjectResponse]{Order, CmdCreateObject}
	DeleteObject = Command[*sitebusv1.DeleteObjectRequest, *sitebusv1.DeleteObjectResponse]{Order, CmdDeleteObject}
	// SettleOrder tells Waldur what a saga made and marks its order done.
	SettleOrder = Command[*sitebusv1.SettleOrderRequest, *sitebusv1.SettleOrderResponse]{Order, CmdSettleOrder}
	BindGroup   = Command[*sitebusv1.BindGroupRequest, *sitebusv1.BindGroupResponse]{Order, CmdBindGroup}
	// UnbindGroup answers how many other objects the group is still bound to.
	UnbindGroup = Command[*sitebusv1.UnbindGroupRequest, *sitebusv1.UnbindGroupResponse]{Order, CmdUnbindGroup}
)

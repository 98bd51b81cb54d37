package ranchercluster

import (
	"context"
	"encoding/json"

	"github.com/sitebus/sitebus/pkg/backend"
)

// PlanCreate decodes a create order's attributes the way the offering's
// deployment_mode reads them and plans the order (PlanManaged or
// PlanSelfManaged): the one call the create saga needs before it acts.
// Read-only mode refuses the order before its attributes are read, as
// Mastermind's validate_order does.
func PlanCreate(ctx context.Context, s *Settings, attributes json.RawMessage, r backend.Resource, cat Catalog) (*Plan, error) {
	if err := readOnly(s); err != nil {
		return nil, err
	}
	if s.Managed() {
		a, err := DecodeManagedAttributes(attributes)
		if err != nil {
			return nil, err
		}
		return PlanManaged(ctx, s, a, r, cat)
	}
	a, err := DecodeSelfManagedAttributes(attributes)
	if err != nil {
		return nil, err
	}
	return PlanSelfManaged(ctx, s, a, r, cat)
}

package managedns

import (
	"fmt"

	"github.com/sitebus/sitebus/pkg/backend/kubeapi"
)

// wrapAPI classifies err from the API server (kubeapi.Kind) for operation
// op ("create", "patch", ...) on the CR name; the message is the Python
// plugin's.
func wrapAPI(op, name string, err error) error {
	if err == nil {
		return nil
	}
	return &kubeapi.Error{Kind: kubeapi.Kind(err), Msg: fmt.Sprintf("Failed to %s ManagedNamespace %s: %v", op, name, err), Err: err}
}

package kube

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
)

var serviceAccountGVR = schema.GroupVersionResource{Version: "v1", Resource: "serviceaccounts"}

// WaitForDefaultServiceAccount waits until the controller manager has
// created the "default" ServiceAccount in namespace: until then the
// ServiceAccount admission plugin rejects every pod created there.
func (c *Cluster) WaitForDefaultServiceAccount(ctx context.Context, namespace string) error {
	var last error
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		_, last = c.dyn.Resource(serviceAccountGVR).Namespace(namespace).Get(ctx, "default", metav1.GetOptions{})
		return last == nil, nil
	})
	if err != nil {
		return fmt.Errorf("no default ServiceAccount in %s (last: %v): %w", namespace, last, err)
	}
	return nil
}

//go:build tools

// Package k8sbin only records the control-plane commands as dependencies so
// that go.sum covers everything `go build` needs.
package k8sbin

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
)

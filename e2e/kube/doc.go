// Package kube runs a real, throw-away Kubernetes control plane for
// end-to-end tests: etcd, kube-apiserver and (optionally)
// kube-controller-manager as local processes on 127.0.0.1.
//
// There is no scheduler and no kubelet, so pods stay Pending; everything an
// operator-style component needs (CRDs, RBAC, admission, quota, namespaces,
// service accounts, garbage collection) is the real thing. The binaries are
// built once by .ci/k8s-binaries.sh into BinDir; etcd is Debian's
// (apt-get install etcd-server). Without them the tests skip, or fail when
// CI=true.
//
// Tests of a package share one cluster per test binary via Shared (with
// RunShared in TestMain); tests that stop the API server take their own with
// StartForTest.
package kube

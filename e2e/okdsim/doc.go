// Package okdsim is a stand-in for the OpenShift (OKD) API server as
// sitebus's OKD backend uses it, in front of a real Kubernetes API server.
//
// OpenShift's project.openshift.io/v1 API is served by the simulator;
// everything else (core v1 namespaces and resourcequotas, rbac role
// bindings, discovery of the real groups) is reverse-proxied to the
// kube-apiserver of Options.Kube with its credentials, so quotas and role
// bindings are real objects and quota status comes from the real
// controller manager. A project is a view of a namespace, as in OpenShift:
//
//   - POST projectrequests creates the namespace as OpenShift's default
//     project template does: annotations openshift.io/display-name,
//     openshift.io/description (from displayName and description) and
//     openshift.io/requester (the token's user), and a RoleBinding "admin"
//     to ClusterRole admin for the requester. Like OpenShift, it ignores
//     the request's metadata.annotations and labels (the template only
//     takes name, displayName, description and the user); a client that
//     wants its own annotations patches the project afterwards.
//   - DELETE projects/{name} deletes the namespace, passing on the
//     body's preconditions.
//   - GET user.openshift.io/v1 users/~ names the token's user, the one
//     recorded as openshift.io/requester.
//
// Errors are Kubernetes Status objects, as OpenShift answers them (409
// AlreadyExists, 422 Invalid, 404 NotFound, 403 Forbidden for the names
// OpenShift reserves).
//
// Authentication is a bearer token, checked against the token file
// (Options.TokenFile, one token per line, optionally followed by the user
// name) on every request, so rotating the file (RotateToken, or any
// writer) makes the old token a 401 at once; and against the access tokens
// the OAuth endpoint (/oauth/token, refresh_token grant) issued. The 401
// body is OpenShift's Status with reason Unauthorized.
//
// Tests inspect projects, the call log (with a token id, never the token)
// and inject faults through Go methods.
//
//	func TestMain(m *testing.M) { os.Exit(kube.RunShared(m)) }
//
//	sim := okdsim.NewTestServer(t, okdsim.Options{Kube: kube.Shared(t).RESTConfig()})
//	// api_url: sim.URL(), token_config file: sim.TokenFile(), token: sim.Token()
package okdsim

// Package okd is the OKD/OpenShift backend (backend_type okd): a Waldur
// resource is an OpenShift project, made through a ProjectRequest
// (project.openshift.io/v1), with a ResourceQuota waldur-quota holding its
// limits (requests, and limits at twice the requests for CPU and memory to
// allow bursting) and one RoleBinding per member of the Waldur team.
//
// It reads the Python plugin's backend_settings (the waldur-site-agent OKD plugin's keys) and does
// what that plugin's README promises where its production path does not:
// limits are set at creation, users are bound with the mapped role (not
// "root"), and Restore puts back the limits in force before a pause or
// downscale rather than fixed defaults.
//
// Authentication is an http.RoundTripper under client-go: a static token,
// a token file (the service account's, or one an external system
// rotates) re-read when it changes, or an OAuth refresh-token grant. A 401
// or 403 refreshes the token and retries the request once, as the Python
// plugin does.
//
// Only projects carrying sitebus's mark (the label
// app.kubernetes.io/managed-by=sitebus on the namespace) are changed or
// deleted. A project the Python agent made is adopted (marked) by the
// first change asked for its resource, when a Waldur resource of the
// offering names it and its openshift.io/requester is the user of the
// configured token (adopt.go); Create never adopts, and any other
// project of the same name is refused, untouched.
package okd

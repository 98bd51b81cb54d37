// Package managedns is the k8s-ut-namespace backend: it turns Waldur
// resources into ManagedNamespace custom resources
// (provisioning.hpc.ut.ee/v1) that the University of Tartu operator
// reconciles into namespaces with quotas.
//
// It writes the same CRs as the Python plugin (name, spec layout, quota
// strings, merge patches) so either agent can take over from the other,
// with two deliberate differences:
//
//   - ownership: a CR sitebus creates carries the label
//     app.kubernetes.io/managed-by=sitebus, and every call that changes a
//     CR refuses one without it (backend.ErrNotManaged). The Python plugin
//     would patch or delete any CR whose name matched; with slugs refused
//     rather than rewritten, no order can reach another tenant's namespace.
//     A CR the Python agent created is adopted (labelled) by the first
//     change asked for its resource, when a Waldur resource of the
//     offering names it and its spec.owner, when present, is that
//     resource's customer and project (adopt.go); Create never adopts.
//   - Restore: Python's restore is a no-op (limits come back only with the
//     next update order). Here Pause and Downscale save the quota they
//     replace in an annotation (in the same patch as the reduction), and
//     Restore puts it back. SetLimits while paused or downscaled changes
//     the saved quota only: the reduced quota stays in force, and Restore
//     brings the new limits.
//
// Keycloak group management (the plugin's RBAC half) is not part of this
// package; its settings are accepted so that Python configurations load.
package managedns

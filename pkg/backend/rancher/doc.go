// Package rancher is the rancher backend: a Waldur resource becomes a
// Rancher project (v3 API) in one cluster, a namespace of the same name in
// it, and a ResourceQuota "custom-resource-quota" imported into that
// namespace with importYaml, as the Python plugin makes them, so either
// agent can take over from the other:
//
//   - names: project = namespace = project_prefix + slug (or "resource-"
//     and the UUID's first 8 characters), refused rather than rewritten
//     when it is no RFC 1123 label;
//   - the project's description and waldur/* annotations, the namespace's
//     pod-security labels, namespace_labels and waldur/managed annotation;
//   - the quota manifest byte for byte as PyYAML dumps it (QuotaYAML), with
//     Python's value formats (FormatQuotaValue) and component mapping;
//   - group bindings with the unencoded filter query and the
//     keycloakoidc_group://<name> principal (BindGroup, UnbindGroup; the
//     Keycloak groups themselves are the saga's, named by ParentGroupName
//     and ChildGroupName).
//
// Deliberate differences from the Python plugin:
//
//   - backend id: Waldur keeps the project id (c-xxx:p-yyy), as with
//     Python; BackendID returns the project name, which can be computed
//     before anything exists, and every method accepts either (see
//     Backend.BackendID).
//   - ownership: an existing project of the name is reused only when it
//     carries waldur/managed: "true" and names this resource (Python
//     reuses any), and every call that changes a project refuses one
//     without waldur/managed (backend.ErrNotManaged). A project sitebus made
//     records the resource's UUID, and is not handed to another resource.
//     One the Python agent made names none: the first change for its
//     resource adopts it (records the UUID) when its organization and
//     project slug are the resource's (adopt.go); Create refuses it.
//   - a failure after the project is made (namespace, quota) fails the
//     call, retryably, instead of being logged: the next Create finishes
//     the job. Keycloak is not touched here.
//   - Pause, Downscale and Restore work (Python's are no-ops): the zero or
//     minimal CPU/memory/storage quota of the ManagedNamespace backend is
//     imported, and the quota in force before is kept in the project's
//     annotations (AnnotationStatus, AnnotationSavedLimits), where List
//     reads the status without further calls, and which survive a
//     namespace recreated by hand. The mark is written before the reduced
//     quota, so a retry after a crash in between finishes with the right
//     saved quota.
//   - usage is what the tenant allocated, as the Python Rancher plugin's README
//     defines it ("actual allocated resources"): the container requests of
//     the pods and the PVC storage requests in the project's namespaces, not
//     the quota's status.used (a sum of limits for limits.cpu, and nothing
//     at all for a namespace without the quota). UsageAll reads many
//     projects' with four lists whatever their number (see usage.go).
//
// ClusterClient (clusters.go, nodes.go) is the other half: whole RKE2
// clusters provisioned through Rancher's v1 API for the cluster-provisioner,
// with their nodes, drain and cluster role template bindings, refusing
// any cluster sitebus did not make for the caller's resource.
package rancher

package rancher

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sitebus/sitebus/pkg/backend"
	"github.com/sitebus/sitebus/pkg/backend/kubeusage"
)

// kubePage bounds one list answer from the cluster proxy, as the
// ManagedNamespace backend pages: a cluster may hold tens of thousands of
// pods.
const kubePage = 500

// kubePageLimit stops a server that hands out continue tokens forever.
const kubePageLimit = 100000

// measure is how a component's usage is read from the sums.
type measure struct {
	key   string // component key
	sum   string // kubeusage key: a pod resource name or kubeusage.Storage
	bytes bool   // reported in GiB
}

// measures are the components usage is reported for, as their limits map
// to the quota: cpu → requests of cpu, ram → of memory, gpu → of
// nvidia.com/gpu (or the component's k8s_resource), storage → PVC storage
// requests. Components without a quota (pods) are left out, as the
// ManagedNamespace backend leaves out what it cannot measure. Without
// configured components, the keys Python falls back to are reported.
func (b *Backend) measures() []measure {
	keys := b.quota.keys
	if len(keys) == 0 {
		keys = sortedKeys(byKey)
	}
	var out []measure
	for _, k := range keys {
		hard, typ, ok := b.quota.hardKey(k)
		if !ok {
			continue
		}
		m := measure{key: k, bytes: typ == "ram" || typ == "storage"}
		if typ == "storage" {
			m.sum = kubeusage.Storage
		} else {
			// limits.cpu → cpu, requests.nvidia.com/gpu-h100 → nvidia.com/gpu-h100:
			// the resource the pods request is the one the quota limits.
			_, m.sum, _ = strings.Cut(hard, ".")
		}
		out = append(out, m)
	}
	return out
}

// newSums sums what measures reads, in the namespaces wanted accepts.
func (b *Backend) newSums(ms []measure, wanted func(string) bool) *kubeusage.Sums {
	var resources []string
	for _, m := range ms {
		if m.sum != kubeusage.Storage {
			resources = append(resources, m.sum)
		}
	}
	return kubeusage.New(resources, wanted)
}

func (b *Backend) components(ms []measure, sums *kubeusage.Sums, namespaces []string) map[string]float64 {
	out := make(map[string]float64, len(ms))
	for _, m := range ms {
		out[m.key] = kubeusage.Value(sums.Get(m.sum, namespaces...), m.bytes)
	}
	return out
}

// Usage is what the tenant allocated in the project's namespaces: the
// container requests of their pods and their PVCs' storage requests
// (what the Python Rancher plugin's README calls "actual allocated
// resources"), read namespace by namespace.
func (b *Backend) Usage(ctx context.Context, backendID string) (map[string]float64, error) {
	p, err := b.resolve(ctx, backendID)
	if err != nil {
		return nil, err
	}
	nss, err := b.api.listNamespaces(ctx, p.ID)
	if err != nil {
		return nil, err
	}
	ms := b.measures()
	sums := b.newSums(ms, nil)
	var names []string
	for _, ns := range nss {
		if ns.ProjectID != p.ID {
			continue // a server ignoring the filter
		}
		names = append(names, ns.Name)
		err := b.api.eachKube(ctx, "pods", ns.Name, kubeusage.PodFieldSelector, sums.AddPod)
		if err == nil {
			err = b.api.eachKube(ctx, "persistentvolumeclaims", ns.Name, "", sums.AddPVC)
		}
		if errors.Is(err, backend.ErrNotFound) {
			continue // the namespace went meanwhile: nothing allocated there
		}
		if err != nil {
			return nil, b.listError(err, "in namespace "+ns.Name)
		}
	}
	return b.components(ms, sums, names), nil
}

// UsageAll implements backend.UsageLister with four lists whatever the
// number of projects: the cluster's projects (to resolve backend ids), and
// through the cluster proxy its namespaces (field.cattle.io/projectId
// says whose they are), running pods and PVCs, each paged. Usage is then
// summed per project over all its namespaces.
func (b *Backend) UsageAll(ctx context.Context, backendIDs []string) (map[string]map[string]float64, error) {
	projects, err := b.api.listProjects(ctx)
	if err != nil {
		return nil, err
	}
	byID := map[string]string{} // backend id → project id
	wantedProject := map[string]bool{}
	for _, id := range backendIDs {
		if p, ok := b.pick(projects, id); ok && p.ClusterID == b.settings.ClusterID {
			byID[id] = p.ID
			wantedProject[p.ID] = true
		}
	}
	out := make(map[string]map[string]float64, len(byID))
	if len(byID) == 0 {
		return out, nil // nothing to read: no cluster-wide list at all
	}
	nsOf := map[string][]string{} // project id → namespaces
	wantedNS := map[string]bool{}
	err = b.api.eachKube(ctx, "namespaces", "", "", func(ns *unstructured.Unstructured) error {
		if pid := ns.GetAnnotations()[projectIDAnnotation]; wantedProject[pid] {
			nsOf[pid] = append(nsOf[pid], ns.GetName())
			wantedNS[ns.GetName()] = true
		}
		return nil
	})
	if err != nil {
		return nil, b.listError(err, "in the cluster")
	}
	ms := b.measures()
	sums := b.newSums(ms, func(ns string) bool { return wantedNS[ns] })
	if len(wantedNS) > 0 {
		if err := b.api.eachKube(ctx, "pods", "", kubeusage.PodFieldSelector, sums.AddPod); err != nil {
			return nil, b.listError(err, "in all namespaces")
		}
		if err := b.api.eachKube(ctx, "persistentvolumeclaims", "", "", sums.AddPVC); err != nil {
			return nil, b.listError(err, "in all namespaces")
		}
	}
	for id, pid := range byID {
		out[id] = b.components(ms, sums, nsOf[pid])
	}
	return out, nil
}

// projectIDAnnotation is the namespace annotation Rancher keeps the
// owning project's id (c-xxx:p-yyy) in.
const projectIDAnnotation = "field.cattle.io/projectId"

// listError makes a 403 on a usage list say what the key lacks: the
// generic message (check the key) would send the operator after a key
// that works. It stays terminal: no retry grants a permission.
func (b *Backend) listError(err error, where string) error {
	var e *APIError
	if !errors.As(err, &e) || e.Status != http.StatusForbidden {
		return err
	}
	what := e.Path[strings.LastIndex(e.Path, "/")+1:]
	out := *e
	out.msg = fmt.Sprintf("Rancher access key %q may not list %s %s of cluster %s (403 on %s %s: %s); usage reporting reads "+
		"namespaces, pods and persistentvolumeclaims through Rancher's cluster proxy: give the key's user list permission "+
		"on them cluster-wide (Rancher's Cluster Owner role, or a custom cluster role with get and list on namespaces, "+
		"pods and persistentvolumeclaims)", b.settings.Username, what, where, b.settings.ClusterID, e.Method, e.Path, e.Message)
	return &out
}

// kubeList is a Kubernetes list answer, with the fields usage reads.
type kubeList struct {
	Metadata struct {
		Continue string `json:"continue"`
	} `json:"metadata"`
	Items []map[string]any `json:"items"`
}

// eachKube lists core/v1 resource (in namespace, or cluster-wide when it
// is empty) through Rancher's cluster proxy, page by page with limit and
// continue, and calls fn on each object.
func (c *client) eachKube(ctx context.Context, resource, namespace, fieldSelector string, fn func(*unstructured.Unstructured) error) error {
	path := "/k8s/clusters/" + url.PathEscape(c.cluster) + "/api/v1/"
	if namespace != "" {
		path += "namespaces/" + url.PathEscape(namespace) + "/"
	}
	path += resource
	q := url.Values{"limit": {strconv.Itoa(kubePage)}}
	if fieldSelector != "" {
		q.Set("fieldSelector", fieldSelector)
	}
	for page := 0; ; page++ {
		if page >= kubePageLimit {
			return fmt.Errorf("Rancher API request failed: GET %s: more than %d pages", path, kubePageLimit) //nolint:staticcheck // Python's message
		}
		var l kubeList
		if err := c.do(ctx, http.MethodGet, path, q.Encode(), nil, &l); err != nil {
			return err
		}
		for i := range l.Items {
			if err := fn(&unstructured.Unstructured{Object: l.Items[i]}); err != nil {
				return err
			}
		}
		if l.Metadata.Continue == "" {
			return nil
		}
		q.Set("continue", l.Metadata.Continue)
	}
}

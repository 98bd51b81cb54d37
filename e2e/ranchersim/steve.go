package ranchersim

import (
	"net/http"
	"strings"
	"time"

	"github.com/sitebus/sitebus/e2e/simkit"
)

// steveKind is one resource type of steve, Rancher's v1 API: its list,
// show and delete by namespace and name, with steve's collection
// envelope and NotFound body, the same for provisioning clusters and
// secrets.
type steveKind[T any] struct {
	// typ is the collection's resourceType, noun the name a NotFound
	// message gives the type (`secrets "x" not found`).
	typ, noun string
	items     func(*Server) *simkit.Store[T]
	namespace func(*T) string
	// labels, when set, lets a list take steve's labelSelector.
	labels func(*T) map[string]string
	// rep renders v; read counts the call as a read of v.
	rep func(s *Server, b string, v *T, read bool) map[string]any
	// drop removes v, whose rendering a delete answers. Caller holds s.mu.
	drop func(s *Server, key string, v *T, rep map[string]any)
}

var v1Clusters = &steveKind[ProvisioningCluster]{
	typ: "provisioning.cattle.io.cluster", noun: "clusters.provisioning.cattle.io",
	items:     func(s *Server) *simkit.Store[ProvisioningCluster] { return s.prov.v1 },
	namespace: func(pc *ProvisioningCluster) string { return pc.Namespace },
	rep:       (*Server).v1ClusterRep,
	drop: func(s *Server, _ string, pc *ProvisioningCluster, rep map[string]any) {
		s.removeCluster(pc.ClusterID)
		rep["metadata"].(map[string]any)["deletionTimestamp"] = s.now().Format(time.RFC3339)
	},
}

var v1Secrets = &steveKind[Secret]{
	typ: "secret", noun: "secrets",
	items:     func(s *Server) *simkit.Store[Secret] { return s.prov.secrets },
	namespace: func(sec *Secret) string { return sec.Namespace },
	labels:    func(sec *Secret) map[string]string { return sec.Labels },
	rep:       func(_ *Server, b string, sec *Secret, _ bool) map[string]any { return secretRep(b, sec) },
	drop:      func(s *Server, key string, _ *Secret, _ map[string]any) { s.prov.secrets.Delete(key) },
}

// routes adds k's collection at coll, all namespaces' and one's, with
// create serving its POSTs.
func (k *steveKind[T]) routes(s *Server, api func(string, handler), coll string, create handler) {
	for _, p := range []string{coll, coll + "/{ns}"} {
		api("GET "+p, k.list(s))
		api("POST "+p, create)
	}
	api("GET "+coll+"/{ns}/{name}", k.get(s))
	api("DELETE "+coll+"/{ns}/{name}", k.remove(s))
}

func (k *steveKind[T]) list(s *Server) handler {
	return func(r *http.Request) (int, any, *apiError) {
		ns := r.PathValue("ns")
		sel := labelSelector{}
		if k.labels != nil {
			var err string
			if sel, err = parseLabelSelector(r.URL.Query().Get("labelSelector")); err != "" {
				return fail(steveErr(http.StatusBadRequest, "BadRequest", err))
			}
		}
		b := simkit.BaseURL(r)
		s.mu.Lock()
		defer s.mu.Unlock()
		data := reps(k.items(s).ListByID(func(v *T) bool {
			return (ns == "" || k.namespace(v) == ns) && (k.labels == nil || sel.matches(k.labels(v)))
		}), func(v *T) map[string]any { return k.rep(s, b, v, true) })
		// steve's collection envelope.
		return ok(map[string]any{
			"type": "collection", "resourceType": k.typ, "count": len(data), "revision": "1",
			"links":       map[string]string{"self": b + r.URL.Path},
			"createTypes": map[string]string{k.typ: b + r.URL.Path},
			"actions":     map[string]string{},
			"data":        data,
		})
	}
}

// find is the object the path names and its key; a missing one is
// steve's NotFound. Caller holds s.mu.
func (k *steveKind[T]) find(s *Server, r *http.Request) (string, *T, *apiError) {
	key := r.PathValue("ns") + "/" + r.PathValue("name")
	if v := k.items(s).Get(key); v != nil {
		return key, v, nil
	}
	return key, nil, steveErr(http.StatusNotFound, "NotFound", k.noun+` "`+r.PathValue("name")+`" not found`)
}

func (k *steveKind[T]) get(s *Server) handler {
	return func(r *http.Request) (int, any, *apiError) {
		s.mu.Lock()
		defer s.mu.Unlock()
		_, v, err := k.find(s, r)
		if err != nil {
			return fail(err)
		}
		return ok(k.rep(s, simkit.BaseURL(r), v, true))
	}
}

func (k *steveKind[T]) remove(s *Server) handler {
	return func(r *http.Request) (int, any, *apiError) {
		s.mu.Lock()
		defer s.mu.Unlock()
		key, v, err := k.find(s, r)
		if err != nil {
			return fail(err)
		}
		rep := k.rep(s, simkit.BaseURL(r), v, false)
		k.drop(s, key, v, rep)
		return ok(rep)
	}
}

// labelSelector is a list of key=value (or key==value) terms.
type labelSelector map[string]string

func parseLabelSelector(s string) (labelSelector, string) {
	sel := labelSelector{}
	for term := range strings.SplitSeq(s, ",") {
		term = strings.TrimSpace(term)
		if term == "" {
			continue
		}
		k, v, ok := strings.Cut(term, "=")
		if !ok || k == "" || strings.ContainsAny(k, "!<>") {
			return nil, "unable to parse requirement: only equality terms (key=value) are simulated: " + term
		}
		sel[k] = strings.TrimPrefix(v, "=")
	}
	return sel, ""
}

func (sel labelSelector) matches(labels map[string]string) bool {
	for k, v := range sel {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

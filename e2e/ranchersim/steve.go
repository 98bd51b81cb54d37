package ranchersim

import (
	"net/http"
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
	items     func(*Server) map[string]*T
	namespace func(*T) string
	// labels, when set, lets a list take steve's labelSelector.
	labels func(*T) map[string]string
	// rep renders v; read counts the call as a read of v.
	rep func(s *Server, b string, v *T, read bool) map[string]any
	// drop removes v, whose rendering a delete answers. Caller holds s.mu.
	drop func(s *Server, key string, v *T, rep map[string]any)
}

var v1Clusters = &steveKind[provCluster]{
	typ: "provisioning.cattle.io.cluster", noun: "clusters.provisioning.cattle.io",
	items:     func(s *Server) map[string]*provCluster { return s.prov.v1 },
	namespace: func(pc *provCluster) string { return pc.namespace },
	rep:       (*Server).v1ClusterRep,
	drop: func(s *Server, _ string, pc *provCluster, rep map[string]any) {
		s.removeCluster(pc.clusterID)
		if meta, _ := rep["metadata"].(map[string]any); meta != nil {
			meta["deletionTimestamp"] = s.now().Format(time.RFC3339)
		}
	},
}

var v1Secrets = &steveKind[v1Secret]{
	typ: "secret", noun: "secrets",
	items:     func(s *Server) map[string]*v1Secret { return s.prov.secrets },
	namespace: func(sec *v1Secret) string { return sec.namespace },
	labels:    func(sec *v1Secret) map[string]string { return sec.labels },
	rep:       func(_ *Server, b string, sec *v1Secret, _ bool) map[string]any { return secretRep(b, sec) },
	drop:      func(s *Server, key string, _ *v1Secret, _ map[string]any) { delete(s.prov.secrets, key) },
}

// routes adds k's collection at coll, all namespaces' and one's, with
// create serving its POSTs.
func (k *steveKind[T]) routes(s *Server, api func(string, handler), coll string, create handler) {
	api("GET "+coll, k.list(s))
	api("POST "+coll, create)
	api("GET "+coll+"/{ns}", k.list(s))
	api("POST "+coll+"/{ns}", create)
	api("GET "+coll+"/{ns}/{name}", k.get(s))
	api("DELETE "+coll+"/{ns}/{name}", k.remove(s))
}

func (k *steveKind[T]) list(s *Server) handler {
	return func(w http.ResponseWriter, r *http.Request) *apiError {
		ns := r.PathValue("ns")
		sel := labelSelector{}
		if k.labels != nil {
			var err string
			if sel, err = parseLabelSelector(r.URL.Query().Get("labelSelector")); err != "" {
				v1Err(w, http.StatusBadRequest, "BadRequest", err)
				return nil
			}
		}
		b := simkit.BaseURL(r)
		s.mu.Lock()
		data := []map[string]any{}
		for _, v := range k.items(s) {
			if (ns == "" || k.namespace(v) == ns) && (k.labels == nil || sel.matches(k.labels(v))) {
				data = append(data, k.rep(s, b, v, true))
			}
		}
		s.mu.Unlock()
		writeV1Collection(w, r, k.typ, data)
		return nil
	}
}

// find is the object the path names; a missing one is answered with
// steve's NotFound. Caller holds s.mu.
func (k *steveKind[T]) find(s *Server, w http.ResponseWriter, r *http.Request) (string, *T) {
	key := r.PathValue("ns") + "/" + r.PathValue("name")
	v := k.items(s)[key]
	if v == nil {
		v1Err(w, http.StatusNotFound, "NotFound", k.noun+` "`+r.PathValue("name")+`" not found`)
	}
	return key, v
}

func (k *steveKind[T]) get(s *Server) handler {
	return func(w http.ResponseWriter, r *http.Request) *apiError {
		s.mu.Lock()
		defer s.mu.Unlock()
		if _, v := k.find(s, w, r); v != nil {
			simkit.WriteJSON(w, http.StatusOK, k.rep(s, simkit.BaseURL(r), v, true))
		}
		return nil
	}
}

func (k *steveKind[T]) remove(s *Server) handler {
	return func(w http.ResponseWriter, r *http.Request) *apiError {
		s.mu.Lock()
		defer s.mu.Unlock()
		if key, v := k.find(s, w, r); v != nil {
			rep := k.rep(s, simkit.BaseURL(r), v, false)
			k.drop(s, key, v, rep)
			simkit.WriteJSON(w, http.StatusOK, rep)
		}
		return nil
	}
}

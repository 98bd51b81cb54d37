package okdsim

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sitebus/sitebus/e2e/simkit"
)

// Discovery: the project group is added to the real server's group list,
// so a discovery client or REST mapper finds it next to the real groups.
// The real server is asked for the plain APIGroupList, not the aggregated
// discovery document a recent client-go prefers; client-go falls back to
// per-group documents when it gets the plain list.

var projectGroup = metav1.APIGroup{
	TypeMeta:         metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"},
	Name:             Group,
	Versions:         []metav1.GroupVersionForDiscovery{{GroupVersion: APIVersion, Version: Version}},
	PreferredVersion: metav1.GroupVersionForDiscovery{GroupVersion: APIVersion, Version: Version},
}

// projectResources are OpenShift's, with the verbs the simulator serves.
var projectResources = metav1.APIResourceList{
	TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
	GroupVersion: APIVersion,
	APIResources: []metav1.APIResource{
		{Name: "projectrequests", Namespaced: false, Kind: "ProjectRequest", Verbs: metav1.Verbs{"create"}},
		{Name: "projects", Namespaced: false, Kind: "Project", Verbs: metav1.Verbs{"delete"}},
	},
}

func (s *Server) apiGroups(w http.ResponseWriter, r *http.Request) {
	var body []byte
	req, err := http.NewRequestWithContext(r.Context(), http.MethodGet, s.kube.proxy.Host.JoinPath("/apis").String(), nil)
	if err != nil {
		writeErr(w, err)
		return
	}
	req.Header.Set("Accept", "application/json")
	// The proxy's transport carries the cluster's credentials.
	resp, err := (&http.Client{Transport: s.kube.proxy.Transport}).Do(req)
	if err == nil {
		defer func() { _ = resp.Body.Close() }()
		body, err = io.ReadAll(resp.Body)
	}
	if err == nil && resp.StatusCode != http.StatusOK {
		w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
		w.WriteHeader(resp.StatusCode)
		_, _ = w.Write(body)
		return
	}
	var list metav1.APIGroupList
	if err == nil {
		err = json.Unmarshal(body, &list)
	}
	if err != nil {
		writeErr(w, fmt.Errorf("discovery from the API server: %w", err))
		return
	}
	list.Groups = append(list.Groups, projectGroup)
	simkit.WriteJSON(w, http.StatusOK, list)
}

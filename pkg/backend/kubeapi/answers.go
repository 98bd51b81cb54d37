package kubeapi

import (
	"encoding/json"
	"net/http"

	"k8s.io/client-go/rest"

	"github.com/sitebus/sitebus/pkg/httpbody"
)

// GuardAnswers wraps cfg's transport, innermost (call it before any other
// Wrap, so a caller's wrapper sees what it refused as a failed request),
// with an httpbody.Guard naming peer: client-go reads an answer whole and
// without a cap, and decodes a 2xx holding a Kubernetes Status of failure
// as the object asked for (a project that "exists" because a proxy said
// so). A watch is a stream, capped but not read ahead. Every backend that
// talks to a Kubernetes API server goes through it.
func GuardAnswers(cfg *rest.Config, peer string) {
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return &httpbody.Guard{Next: rt, Peer: peer, ErrorObject: IsFailureStatus,
			Stream: func(r *http.Request) bool { return r.URL.Query().Get("watch") == "true" }}
	})
}

// IsFailureStatus tells a Kubernetes Status of failure ({"kind": "Status",
// "status": "Failure"}) from a result; a deletion's Status of success is a
// result.
func IsFailureStatus(body []byte) bool {
	var st struct {
		Kind   string `json:"kind"`
		Status any    `json:"status"`
	}
	return json.Unmarshal(body, &st) == nil && st.Kind == "Status" && st.Status == "Failure"
}

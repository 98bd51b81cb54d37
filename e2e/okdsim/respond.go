package okdsim

import (
	"cmp"
	"errors"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/sitebus/sitebus/e2e/simkit"
)

// API group and resources the simulator serves.
const (
	Group      = "project.openshift.io"
	Version    = "v1"
	APIVersion = Group + "/" + Version
	apiPrefix  = "/apis/" + APIVersion
)

var (
	projectsGR = schema.GroupResource{Group: Group, Resource: "projects"}
	// OpenShift's AlreadyExists for a project request names the resource
	// "project" (singular): project.project.openshift.io "x" already exists.
	projectRequestGR = schema.GroupResource{Group: Group, Resource: "project"}
)

// writeErr answers err as a Kubernetes Status: a Kubernetes API error keeps
// its own status, anything else is a 500.
func writeErr(w http.ResponseWriter, err error) {
	var st apierrors.APIStatus
	var status metav1.Status
	if errors.As(err, &st) {
		status = st.Status()
	} else {
		status = apierrors.NewInternalError(err).ErrStatus
	}
	status.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	status.Code = cmp.Or(status.Code, http.StatusInternalServerError)
	simkit.WriteJSON(w, int(status.Code), status)
}

// successStatus is OpenShift's answer to a project delete: a bare Status,
// no details.
func successStatus() metav1.Status {
	return metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusSuccess}
}

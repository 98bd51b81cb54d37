package provisioner

import (
	"strings"
	"testing"

	"github.com/sitebus/sitebus/pkg/backend/vcluster"
)

func TestExplainVClusterNamesWhatEachStepMakesOrRemoves(t *testing.T) {
	in := VClusterInput{ResourceUUID: "5b7e2c1a-0000-4000-8000-000000000001", Resource: ResourceRef{UUID: "5b7e2c1a-0000-4000-8000-000000000001", Slug: "lab"}}
	cases := []struct {
		name, def string
		rancher   bool
		want      map[string]string
	}{
		{name: "a create imported into Rancher", def: VClusterCreate, rancher: true, want: map[string]string{
			"namespace": "host namespace vc-lab with ResourceQuota " + vcluster.QuotaName, "kubeconfig": "Secret vc-lab in vc-lab",
			"import": "makes the Rancher cluster vc-lab", "settle": "backend_id vc-lab"}},
		{name: "a create without Rancher", def: VClusterCreate, want: map[string]string{"import": "nothing (import_to_rancher is off)"}},
		{name: "a terminate", def: VClusterTerminate, rancher: true, want: map[string]string{
			"import": "deletes the Rancher cluster vc-lab", "namespace": "deletes the host namespace vc-lab"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := &VClusterOffering{Settings: vcluster.Settings{ImportToRancher: tc.rancher}}
			p, err := ExplainVCluster(o, tc.def, in)
			if err != nil {
				t.Fatal(err)
			}
			for _, def := range vclusterDefinitions(Timeouts{}) {
				if def.Name != tc.def {
					continue
				}
				for _, st := range def.Steps {
					if p.Steps[st.Name] == "" {
						t.Errorf("step %s says nothing", st.Name)
					}
				}
			}
			for step, want := range tc.want {
				if !strings.Contains(p.Steps[step], want) {
					t.Errorf("step %s: %q, want it to contain %q", step, p.Steps[step], want)
				}
			}
		})
	}
	if _, err := ExplainVCluster(&VClusterOffering{}, VClusterCreate, VClusterInput{ResourceUUID: in.ResourceUUID}); err == nil {
		t.Error("a resource without a slug was planned; the namespace step refuses it")
	}
}

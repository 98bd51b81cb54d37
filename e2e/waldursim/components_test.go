package waldursim_test

import (
	"net/http"
	"testing"

	"github.com/sitebus/sitebus/e2e/waldursim"
)

const componentsPath = "/api/marketplace-provider-offerings/" + offering + "/"

func componentByType(t *testing.T, s *waldursim.Server, typ string) map[string]any {
	t.Helper()
	var o struct {
		Components []map[string]any `json:"components"`
	}
	call(t, s, "GET", componentsPath+"?field=components", token, "").json(t, &o)
	for _, c := range o.Components {
		if c["type"] == typ {
			return c
		}
	}
	return nil
}

func TestCreateOfferingComponent(t *testing.T) {
	tests := map[string]struct {
		body   string
		status int
		want   string // the response body
	}{
		"a new component, as the Python agent sends it": {
			body:   `{"billing_type":"limit","type":"gpu","name":"GPU","measured_unit":"units","limit_amount":4.0}`,
			status: http.StatusCreated, want: "",
		},
		"a type the offering has": {
			body:   `{"billing_type":"limit","type":"cpu","name":"CPU","measured_unit":"cores","limit_amount":null}`,
			status: http.StatusBadRequest, want: `["Component cpu already exists."]` + "\n",
		},
		"required fields missing": {
			body:   `{"measured_unit":"units"}`,
			status: http.StatusBadRequest,
			want:   `{"billing_type":["This field is required."],"name":["This field is required."],"type":["This field is required."]}` + "\n",
		},
		"a billing type Waldur does not have": {
			body:   `{"billing_type":"monthly","type":"gpu","name":"GPU"}`,
			status: http.StatusBadRequest, want: `{"billing_type":["\"monthly\" is not a valid choice."]}` + "\n",
		},
		"a fractional limit": {
			body:   `{"billing_type":"limit","type":"gpu","name":"GPU","limit_amount":2.5}`,
			status: http.StatusBadRequest, want: `{"limit_amount":["A valid integer is required."]}` + "\n",
		},
		"a prepaid-only field on a component that is not prepaid": {
			body:   `{"billing_type":"limit","type":"gpu","name":"GPU","min_prepaid_duration":3}`,
			status: http.StatusBadRequest, want: `{"min_prepaid_duration":["This field can only be set on prepaid components."]}` + "\n",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s := newSim(t, waldursim.Config{})
			r := call(t, s, "POST", componentsPath+"create_offering_component/", token, tc.body)
			wantStatus(t, r, tc.status)
			if r.body != tc.want {
				t.Errorf("body %q, want %q", r.body, tc.want)
			}
		})
	}
	t.Run("the new component is shown with Waldur's defaults", func(t *testing.T) {
		s := newSim(t, waldursim.Config{})
		wantStatus(t, call(t, s, "POST", componentsPath+"create_offering_component/", token,
			`{"billing_type":"one","type":"gpu","name":"GPU","measured_unit":"units","limit_amount":4.0,"is_prepaid":true}`), http.StatusCreated)
		c := componentByType(t, s, "gpu")
		if c == nil || c["uuid"] == "" || c["limit_amount"] != float64(4) || c["is_prepaid"] != true || c["description"] != "" ||
			c["unit_factor"] != float64(1) || c["limit_period"] != nil || c["billing_type"] != "one" {
			t.Errorf("component %v", c)
		}
		if len(s.Components(offering)) != 4 {
			t.Errorf("Components() = %v", s.Components(offering))
		}
	})
}

func TestUpdateOfferingComponent(t *testing.T) {
	s := newSim(t, waldursim.Config{})
	cpu := componentByType(t, s, "cpu")
	id, _ := cpu["uuid"].(string)
	if id == "" {
		t.Fatalf("fixture component without a uuid: %v", cpu)
	}
	update := func(body string) response {
		return call(t, s, "POST", componentsPath+"update_offering_component/", token, body)
	}
	t.Run("without a uuid", func(t *testing.T) {
		r := update(`{"type":"cpu","name":"CPU"}`)
		wantStatus(t, r, http.StatusBadRequest)
		if r.body != `{"details":"UUID for offering component was not provided."}`+"\n" {
			t.Errorf("body %q", r.body)
		}
	})
	t.Run("a uuid the offering does not have", func(t *testing.T) {
		r := update(`{"uuid":"00000000000040008000000000000000","name":"x"}`)
		wantStatus(t, r, http.StatusNotFound)
		if r.body != "" {
			t.Errorf("body %q, want none", r.body)
		}
	})
	t.Run("an invalid value changes nothing", func(t *testing.T) {
		wantStatus(t, update(`{"uuid":"`+id+`","name":"Cores","limit_amount":"many"}`), http.StatusBadRequest)
		if c := componentByType(t, s, "cpu"); c["name"] != "CPU" {
			t.Errorf("component changed: %v", c)
		}
	})
	t.Run("a partial update keeps the fields it does not send", func(t *testing.T) {
		r := update(`{"uuid":"` + id + `","billing_type":"limit","type":"cpu","name":"Cores","measured_unit":"vCPU","limit_amount":16}`)
		wantStatus(t, r, http.StatusOK)
		if r.body != "" {
			t.Errorf("body %q, want none", r.body)
		}
		c := componentByType(t, s, "cpu")
		if c["name"] != "Cores" || c["measured_unit"] != "vCPU" || c["limit_amount"] != float64(16) || c["limit_period"] != "month" || c["uuid"] != id {
			t.Errorf("component %v", c)
		}
	})
}

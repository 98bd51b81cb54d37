package waldur

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
)

func TestComponentRequestDiffers(t *testing.T) {
	eight := 8.0
	existing := func(js string) OfferingComponent {
		var c OfferingComponent
		if err := json.Unmarshal([]byte(js), &c); err != nil {
			t.Fatal(err)
		}
		return c
	}
	cpu := ComponentRequest{BillingType: "limit", Type: "cpu", Name: "CPU", MeasuredUnit: "cores", LimitAmount: &eight}
	tests := map[string]struct {
		req      ComponentRequest
		existing string
		want     []string
	}{
		"same values, an integer for a float limit": {
			req:      cpu,
			existing: `{"uuid":"k1","type":"cpu","name":"CPU","billing_type":"limit","measured_unit":"cores","limit_amount":8,"description":"set in the UI"}`,
		},
		"a changed label and unit": {
			req:      cpu,
			existing: `{"uuid":"k1","type":"cpu","name":"Cores","billing_type":"limit","measured_unit":"vCPU","limit_amount":8}`,
			want:     []string{"measured_unit", "name"},
		},
		"no limit configured against one in Waldur": {
			req:      ComponentRequest{BillingType: "usage", Type: "cpu", Name: "CPU", MeasuredUnit: "cores"},
			existing: `{"uuid":"k1","type":"cpu","name":"CPU","billing_type":"usage","measured_unit":"cores","limit_amount":8}`,
			want:     []string{"limit_amount"},
		},
		"no limit on either side (null equals absent)": {
			req:      ComponentRequest{BillingType: "usage", Type: "cpu", Name: "CPU", MeasuredUnit: "cores"},
			existing: `{"uuid":"k1","type":"cpu","name":"CPU","billing_type":"usage","measured_unit":"cores"}`,
		},
		"an optional field differs": {
			req: ComponentRequest{BillingType: "one", Type: "gpu", Name: "GPU", MeasuredUnit: "units",
				Optional: map[string]any{"is_prepaid": true, "limit_period": "month"}},
			existing: `{"uuid":"k1","type":"gpu","name":"GPU","billing_type":"one","measured_unit":"units","limit_amount":null,"is_prepaid":false,"limit_period":"month"}`,
			want:     []string{"is_prepaid"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := tc.req.Differs(existing(tc.existing)); !slices.Equal(got, tc.want) {
				t.Errorf("Differs = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestComponentCallsRefuseAMissingOrExtraUUID(t *testing.T) {
	srv := newRecorder(t, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) })
	c := newTestClient(t, srv.URL)
	ctx := context.Background()
	if err := c.UpdateOfferingComponent(ctx, "off1", ComponentRequest{Type: "cpu"}); err == nil || !strings.Contains(err.Error(), "uuid is required") {
		t.Errorf("update without uuid: %v", err)
	}
	if err := c.CreateOfferingComponent(ctx, "off1", ComponentRequest{UUID: "k1", Type: "cpu"}); err == nil || !strings.Contains(err.Error(), "has no uuid") {
		t.Errorf("create with uuid: %v", err)
	}
	if n := srv.count(); n != 0 {
		t.Errorf("%d requests sent for refused calls", n)
	}
}

// A DRF validation error is returned with its body, which names the field.
func TestComponentValidationErrorKeepsTheBody(t *testing.T) {
	srv := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusBadRequest, `{"limit_amount":["A valid integer is required."]}`)
	})
	c := newTestClient(t, srv.URL)
	half := 0.5
	err := c.CreateOfferingComponent(context.Background(), "off1", ComponentRequest{BillingType: "limit", Type: "cpu", Name: "CPU", LimitAmount: &half})
	if StatusCode(err) != http.StatusBadRequest || !strings.Contains(err.Error(), `"limit_amount":["A valid integer is required."]`) {
		t.Errorf("err = %v", err)
	}
}

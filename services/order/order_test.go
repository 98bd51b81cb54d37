package order

import (
	"errors"
	"maps"
	"testing"

	"github.com/sitebus/sitebus/pkg/waldur"
)

func TestWaldurLimitsRoundToIntegers(t *testing.T) {
	got := WaldurLimits(map[string]float64{"cpu": 2, "ram": 7.6, "storage": 0.4})
	if want := map[string]int64{"cpu": 2, "ram": 8, "storage": 0}; !maps.Equal(got, want) {
		t.Errorf("WaldurLimits = %v, want %v", got, want)
	}
}

func TestWhichWaldurErrorsEndAnOrder(t *testing.T) {
	tests := map[string]struct {
		err      error
		terminal bool
	}{
		"a 400 cannot be fixed by retrying":   {err: &waldur.APIError{StatusCode: 400}, terminal: true},
		"a 403 cannot be fixed by retrying":   {err: &waldur.APIError{StatusCode: 403}, terminal: true},
		"a 404 is handled where it happens":   {err: &waldur.APIError{StatusCode: 404}},
		"a 409 means someone else settled it": {err: &waldur.APIError{StatusCode: 409}},
		"a 429 is retried":                    {err: &waldur.APIError{StatusCode: 429}},
		"a 503 is retried":                    {err: &waldur.APIError{StatusCode: 503}},
		"a transport error is retried":        {err: errors.New("connection refused")},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := isTerminalWaldur(tc.err); got != tc.terminal {
				t.Errorf("isTerminalWaldur = %v, want %v", got, tc.terminal)
			}
		})
	}
}

package drift

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/sitebus/sitebus/pkg/bus"
	"github.com/sitebus/sitebus/pkg/bus/bustest"
	"github.com/sitebus/sitebus/pkg/contract"
)

// fakeCheck finds what it holds until repaired.
type fakeCheck struct {
	found    []contract.DriftFinding
	findErr  error
	fixErr   error
	repaired []string
}

func (c *fakeCheck) Find(context.Context) ([]contract.DriftFinding, error) { return c.found, c.findErr }

func (c *fakeCheck) Repair(_ context.Context, f contract.DriftFinding) error {
	if c.fixErr != nil {
		return c.fixErr
	}
	c.repaired = append(c.repaired, f.Object)
	return nil
}

func TestPassReportsAndRepairs(t *testing.T) {
	limits := &fakeCheck{found: []contract.DriftFinding{{Kind: contract.DriftLimits, Resource: "r1", Object: "ns-b", Want: "cpu=4", Have: "cpu=40"}}}
	members := &fakeCheck{found: []contract.DriftFinding{{Kind: contract.DriftMembers, Resource: "r2", Object: "g-a", Want: "alice in", Have: "alice out"}}, fixErr: errors.New("keycloak down")}
	broken := &fakeCheck{findErr: errors.New("platform does not answer")}
	tests := map[string]struct {
		repair       bool
		wantRepaired []bool
	}{
		"a report changes nothing":                 {repair: false, wantRepaired: []bool{false, false}},
		"a repair marks what it put back, only it": {repair: true, wantRepaired: []bool{true, false}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			limits.repaired, members.repaired = nil, nil
			s := New(Config{Logger: slog.New(slog.DiscardHandler), Offerings: []Offering{{UUID: "hex", Name: "o", Checks: []Check{members, broken, limits}}}})
			reports := s.Pass(t.Context(), tc.repair)
			if len(reports) != 1 {
				t.Fatalf("reports %d", len(reports))
			}
			r := reports[0]
			if len(r.Findings) != 2 || r.Findings[0].Kind != contract.DriftLimits || r.Findings[1].Kind != contract.DriftMembers {
				t.Fatalf("findings %+v: want limits then members", r.Findings)
			}
			for i, f := range r.Findings {
				if f.Repaired != tc.wantRepaired[i] {
					t.Errorf("%s repaired = %v, want %v", f.Kind, f.Repaired, tc.wantRepaired[i])
				}
			}
			if tc.repair && r.Findings[1].RepairError != "keycloak down" {
				t.Errorf("repair error %q", r.Findings[1].RepairError)
			}
			if !tc.repair && len(limits.repaired) != 0 {
				t.Errorf("a report repaired %v", limits.repaired)
			}
			if len(r.Errors) != 1 || r.Errors[0] != "platform does not answer" {
				t.Errorf("errors %v: want the failed check's", r.Errors)
			}
		})
	}
}

// The periodic pass repairs and publishes each offering's report under
// drift.<offering> in the status bucket, where the status page reads it.
func TestRunPublishesTheReport(t *testing.T) {
	b := bustest.New(t, bus.Config{})
	limits := &fakeCheck{found: []contract.DriftFinding{{Kind: contract.DriftLimits, Resource: "r1", Object: "ns-b", Want: "cpu=4", Have: "cpu=40"}}}
	s := New(Config{Logger: slog.New(slog.DiscardHandler), Period: 10 * time.Millisecond, JS: b.JetStream(), Identity: "proc-1",
		Offerings: []Offering{{UUID: "0123456789abcdef0123456789abcdef", Name: "o", Checks: []Check{limits}}}})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { _ = s.Run(ctx); close(done) }()
	t.Cleanup(cancel)
	var r contract.DriftReport
	for {
		kv, err := b.JetStream().KeyValue(ctx, contract.StatusBucket)
		if err == nil {
			if e, err := kv.Get(ctx, contract.DriftKey("0123456789abcdef0123456789abcdef")); err == nil {
				if err := json.Unmarshal(e.Value(), &r); err != nil {
					t.Fatal(err)
				}
				break
			}
		}
		select {
		case <-time.After(20 * time.Millisecond):
		case <-t.Context().Done():
			t.Fatal("no report published")
		}
	}
	cancel()
	<-done // the pass's goroutine has ended: its repairs are readable
	if r.Publisher != "proc-1" || len(r.Findings) != 1 || !r.Findings[0].Repaired || len(limits.repaired) == 0 {
		t.Errorf("report %+v (repaired %v), want the limits finding, repaired, by proc-1", r, limits.repaired)
	}
}

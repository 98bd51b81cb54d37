package statuspage

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sitebus/sitebus/pkg/bus"
	"github.com/sitebus/sitebus/pkg/bus/bustest"
	"github.com/sitebus/sitebus/pkg/contract"
	"github.com/sitebus/sitebus/pkg/saga"
)

// Load reads the real stores on an embedded JetStream: the health
// snapshot a Publisher wrote, a saga the coordinator stored, a dead letter
// the bus parked; what peers wrote comes back redacted.
func TestLoadReadsTheStoresAndRedacts(t *testing.T) {
	const secret = "kc-adm1n-pa55"
	const hex = "0123456789abcdef0123456789abcdef"
	redact := func(s string) string { return strings.ReplaceAll(s, secret, "[REDACTED]") }
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b := bustest.New(t, bus.Config{})
	quiet := slog.New(slog.DiscardHandler)

	co, err := saga.New(b.JetStream(), saga.Config{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if err := co.Register(saga.Definition{Name: "demo", Steps: []saga.Step{{Name: "one", Action: "act"}}}); err != nil {
		t.Fatal(err)
	}
	for id, offering := range map[string]string{"order-mine": "01234567-89ab-cdef-0123-456789abcdef", "order-other": "ffffffffffffffffffffffffffffffff"} {
		if _, err := co.Start(ctx, "demo", id, map[string]string{"offering_uuid": offering}); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Park(ctx, bus.DeadLetter{Source: "stomp-bridge", Reason: "Keycloak refused " + secret, Subject: "waldur." + hex + ".order.000",
		ID: "frame:1", Data: []byte("{")}); err != nil {
		t.Fatal(err)
	}

	// A drift report as the drift pass publishes it, beside the snapshots.
	kv, err := bus.EnsureKeyValue(ctx, b.JetStream(), jetstream.KeyValueConfig{Bucket: Bucket, History: 1})
	if err != nil {
		t.Fatal(err)
	}
	report, _ := json.Marshal(contract.DriftReport{OfferingUUID: hex, Publisher: "proc-2", Findings: []contract.DriftFinding{
		{Kind: contract.DriftLabels, Resource: "r-1", Object: "ns-alpha", Want: "label present", Have: "token " + secret}}})
	if _, err := kv.Put(ctx, contract.DriftKey(hex), report); err != nil {
		t.Fatal(err)
	}

	pub, err := NewPublisher(b.JetStream(), PublisherConfig{
		Offerings: []Offering{{UUID: hex, Name: "k8s"}}, CheckPeriod: time.Minute, PublishPeriod: 20 * time.Millisecond,
		Checks: func(context.Context, int) []Check {
			return []Check{{Name: "keycloak token", Detail: "login with " + secret + " refused"}}
		},
		Sessions: func() []contract.StompSession {
			return []contract.StompSession{{OfferingUUID: hex, ObjectType: "order", Connected: true}, {OfferingUUID: "other", ObjectType: "order"}}
		},
		Identity: "proc-1", Logger: quiet,
	})
	if err != nil {
		t.Fatal(err)
	}
	pctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { pub.Run(pctx); close(done) }()
	// The snapshot with the checks' first results: the page's own signal.
	for {
		st, err := readStatus(ctx, b.JetStream())
		if err != nil {
			t.Fatal(err)
		}
		if len(st.health[hex].Checks) > 0 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("no health snapshot with checks")
		case <-time.After(20 * time.Millisecond):
		}
	}
	stop()
	<-done

	v := Load(ctx, Sources{Sagas: co, Bus: b, JS: b.JetStream()}, []Offering{{UUID: hex, Name: "k8s"}}, redact, time.Hour, time.Now())
	if len(v.Problems) > 0 {
		t.Fatalf("problems: %q", v.Problems)
	}
	o := v.Offerings[0]
	if len(o.Active) != 1 || o.Active[0].ID != "order-mine" {
		t.Errorf("active sagas %+v, want order-mine (its input's offering_uuid, dashed)", o.Active)
	}
	if v.Elsewhere == nil || len(v.Elsewhere.Active) != 1 || v.Elsewhere.Active[0].ID != "order-other" {
		t.Errorf("elsewhere %+v, want order-other", v.Elsewhere)
	}
	if o.DeadLetterCount != 1 || o.DeadLetters[0].Reason != "Keycloak refused [REDACTED]" {
		t.Errorf("dead letters %+v", o.DeadLetters)
	}
	h := o.Health
	if h == nil || len(h.Checks) != 1 || h.Checks[0].Detail != "login with [REDACTED] refused" || h.OK {
		t.Fatalf("health %+v, want the failed check, redacted", h)
	}
	if d := o.Drift; d == nil || len(d.Findings) != 1 || d.Findings[0].Have != "token [REDACTED]" || d.Left != 1 || d.Publisher != "proc-2" {
		t.Errorf("drift %+v, want the published finding, redacted and not repaired", d)
	}
	if len(h.Stomp) != 1 || !h.Stomp[0].Connected || h.Publisher != "proc-1" {
		t.Errorf("health %+v, want the offering's one connected session from proc-1", h)
	}
}

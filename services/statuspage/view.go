package statuspage

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sitebus/sitebus/pkg/bus"
	"github.com/sitebus/sitebus/pkg/contract"
	"github.com/sitebus/sitebus/pkg/saga"
)

// View is what the page shows. It holds no configuration value beyond the
// offerings' names and UUIDs, and every text from a peer or a store is
// redacted before it gets here.
type View struct {
	Generated time.Time
	// Refresh is the page's auto-refresh, in seconds.
	Refresh   int
	Offerings []OfferingView
	// Elsewhere holds the sagas and dead letters tied to no configured
	// offering (another deployment's, or a frame without one); nil when
	// there are none.
	Elsewhere *OfferingView
	// Problems are the stores that could not be read.
	Problems []string
}

// OfferingView is one offering's part of the page. Each kind of fact is a
// section of its own (a template of the same name), so another one (the
// drift found) is one more field and one more template.
type OfferingView struct {
	Name, UUID  string
	Health      *HealthView
	Active      []SagaView
	Parked      []SagaView
	Recent      []OrderView
	DeadLetters []DeadLetterView
	// DeadLetterCount counts the offering's letters among the newest
	// read, of which DeadLetters are the newest few.
	DeadLetterCount int
	// Drift is what the last drift pass found; nil before the first.
	Drift *DriftView
}

// DriftView is the last drift pass's report of an offering.
type DriftView struct {
	Checked, Publisher string
	Findings           []contract.DriftFinding
	Errors             []string
	// Left counts the findings not repaired.
	Left int
}

// NeedsAttention: a saga is parked, a dead letter waits or a check fails.
func (o OfferingView) NeedsAttention() bool {
	return len(o.Parked) > 0 || o.DeadLetterCount > 0 || (o.Health != nil && !o.Health.OK) ||
		(o.Drift != nil && (o.Drift.Left > 0 || len(o.Drift.Errors) > 0))
}

// HealthView is an offering's health snapshot as of the page.
type HealthView struct {
	OK bool
	// Stale: the snapshot is older than three publish periods, so the
	// process that publishes it may be down.
	Stale      bool
	CheckedAgo string
	Published  string
	Publisher  string
	Checks     []Check
	Stomp      []StompView
}

// StompView is one STOMP subscription.
type StompView struct {
	ObjectType   string
	Connected    bool
	LastFrameAgo string
}

// SagaView is one saga with its steps.
type SagaView struct {
	ID, Definition, Status string
	Age                    string
	Error, ParkReason      string
	Steps                  []StepView
}

// StepView is one step of a saga.
type StepView struct {
	Name, Status      string
	Attempts          int
	Error, CompError  string
	CompensationTries int
}

// OrderView is an order's saga that has ended.
type OrderView struct {
	SagaID, Definition, Outcome string
	Finished                    string
	Latency                     string
	Error                       string
	OK                          bool
}

// DeadLetterView is one dead letter.
type DeadLetterView struct {
	Seq                     uint64
	Parked                  string
	Source, Subject, Reason string
	Deliveries              uint64
}

// Sources are the stores the page reads, each through the reader its CLI
// command uses: the saga coordinator's List (`sitebus sagas list`) and the
// bus's dead-letter scan (`sitebus dlq list`).
type Sources struct {
	Sagas *saga.Coordinator
	Bus   *bus.Bus
	JS    jetstream.JetStream
}

// Limits bound what one page shows per offering.
const (
	recentOrders = 15
	deadLetters  = 25
	// scanLetters bounds the dead letters read for one page: the newest.
	scanLetters = 1000
)

// Load reads the stores and builds the view of offerings at now.
func Load(ctx context.Context, src Sources, offerings []Offering, redact func(string) string, publishPeriod time.Duration, now time.Time) View {
	v := View{Generated: now}
	byUUID := map[string]*OfferingView{}
	for _, o := range offerings {
		v.Offerings = append(v.Offerings, OfferingView{Name: o.Name, UUID: o.UUID})
	}
	for i := range v.Offerings {
		byUUID[v.Offerings[i].UUID] = &v.Offerings[i]
	}
	elsewhere := &OfferingView{Name: "not tied to a configured offering"}
	place := func(uuid string) *OfferingView {
		if o := byUUID[uuid]; o != nil {
			return o
		}
		return elsewhere
	}
	problem := func(what string, err error) {
		v.Problems = append(v.Problems, redact(fmt.Sprintf("%s: %v", what, err)))
	}

	st, err := readStatus(ctx, src.JS)
	if err != nil {
		problem("health snapshots and drift reports ("+Bucket+")", err)
	}
	for i := range v.Offerings {
		if h, ok := st.health[v.Offerings[i].UUID]; ok {
			v.Offerings[i].Health = healthView(h, redact, publishPeriod, now)
		}
		if r, ok := st.drift[v.Offerings[i].UUID]; ok {
			v.Offerings[i].Drift = driftView(r, redact)
		}
	}

	sagas, err := src.Sagas.List(ctx, saga.Filter{})
	if err != nil {
		problem("sagas ("+saga.DefaultBucket+")", err)
	}
	// Newest first: what changed last is what an operator looks for.
	slices.SortFunc(sagas, func(a, b saga.Saga) int { return b.Updated.Compare(a.Updated) })
	for _, s := range sagas {
		o := place(sagaOffering(s))
		switch s.Status {
		case saga.StatusRunning, saga.StatusCompensating:
			o.Active = append(o.Active, sagaView(s, redact, now))
		case saga.StatusParked:
			o.Parked = append(o.Parked, sagaView(s, redact, now))
		default:
			if len(o.Recent) < recentOrders {
				o.Recent = append(o.Recent, orderView(s, redact, now))
			}
		}
	}

	dls, err := src.Bus.LatestDeadLetters(ctx, scanLetters)
	if err != nil {
		problem("dead letters ("+bus.DLQStream+")", err)
	}
	slices.Reverse(dls) // newest first
	for _, d := range dls {
		o := place(letterOffering(d, byUUID))
		o.DeadLetterCount++
		if len(o.DeadLetters) < deadLetters {
			o.DeadLetters = append(o.DeadLetters, DeadLetterView{Seq: d.Seq, Parked: stamp(d.Time), Source: d.Source,
				Subject: redact(d.Subject), Reason: redact(d.Reason), Deliveries: d.Deliveries})
		}
	}
	if len(elsewhere.Active)+len(elsewhere.Parked)+len(elsewhere.Recent)+len(elsewhere.DeadLetters) > 0 {
		v.Elsewhere = elsewhere
	}
	return v
}

func driftView(r contract.DriftReport, redact func(string) string) *DriftView {
	dv := &DriftView{Checked: stamp(r.Checked), Publisher: r.Publisher}
	for _, f := range r.Findings {
		f.Want, f.Have, f.RepairError = redact(f.Want), redact(f.Have), redact(f.RepairError)
		if !f.Repaired {
			dv.Left++
		}
		dv.Findings = append(dv.Findings, f)
	}
	for _, e := range r.Errors {
		dv.Errors = append(dv.Errors, redact(e))
	}
	return dv
}

func healthView(h Health, redact func(string) string, publishPeriod time.Duration, now time.Time) *HealthView {
	hv := &HealthView{OK: true, Published: stamp(h.Published), Publisher: h.Publisher,
		Stale: now.Sub(h.Published) > 3*publishPeriod}
	if h.Checked.IsZero() {
		hv.CheckedAgo = "not yet"
	} else {
		hv.CheckedAgo = ago(now, h.Checked)
	}
	for _, c := range h.Checks {
		c.Detail, c.Fix = redact(c.Detail), redact(c.Fix)
		hv.OK = hv.OK && c.OK
		hv.Checks = append(hv.Checks, c)
	}
	stomp := slices.Clone(h.Stomp)
	slices.SortFunc(stomp, func(a, b contract.StompSession) int { return strings.Compare(a.ObjectType, b.ObjectType) })
	for _, s := range stomp {
		sv := StompView{ObjectType: s.ObjectType, Connected: s.Connected, LastFrameAgo: "no frame since sitebus started"}
		if !s.LastFrame.IsZero() {
			sv.LastFrameAgo = "last frame " + ago(now, s.LastFrame)
		}
		hv.OK = hv.OK && s.Connected
		hv.Stomp = append(hv.Stomp, sv)
	}
	hv.OK = hv.OK && !hv.Stale
	return hv
}

func sagaView(s saga.Saga, redact func(string) string, now time.Time) SagaView {
	v := SagaView{ID: s.ID, Definition: s.Definition, Status: string(s.Status), Age: ago(now, s.Created),
		Error: redact(s.Error), ParkReason: redact(s.ParkReason)}
	for _, st := range s.Steps {
		v.Steps = append(v.Steps, StepView{Name: st.Name, Status: string(st.Status), Attempts: st.Attempts,
			Error: redact(st.Error), CompError: redact(st.CompensationError), CompensationTries: st.CompensationAttempts})
	}
	return v
}

func orderView(s saga.Saga, redact func(string) string, now time.Time) OrderView {
	return OrderView{SagaID: s.ID, Definition: s.Definition, Outcome: string(s.Status), OK: s.Status == saga.StatusSucceeded,
		Finished: ago(now, s.Updated), Latency: s.Updated.Sub(s.Created).Round(time.Millisecond).String(), Error: redact(s.Error)}
}

// sagaOffering is the offering UUID (without dashes) of the saga's input:
// every order saga's input carries offering_uuid.
func sagaOffering(s saga.Saga) string {
	var in struct {
		OfferingUUID string `json:"offering_uuid"`
	}
	_ = json.Unmarshal(s.Input, &in)
	return strings.ToLower(strings.ReplaceAll(in.OfferingUUID, "-", ""))
}

// letterOffering finds the offering of a dead letter in its subject
// (waldur.<offering>.…), the frame's destination (a queue named after the
// offering) or, for a frame with neither, its payload (the event carries
// the offering UUID).
func letterOffering(d bus.DeadLetter, offerings map[string]*OfferingView) string {
	for uuid := range offerings {
		if strings.Contains(d.Subject, uuid) || strings.Contains(d.Header.Get("Sitebus-Frame-Destination"), uuid) ||
			bytes.Contains(d.Data, []byte(uuid)) {
			return uuid
		}
	}
	return ""
}

func stamp(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05Z") }

// ago says how long before now t was, to the second.
func ago(now, t time.Time) string {
	d := now.Sub(t)
	if d < time.Second {
		return "just now"
	}
	return d.Round(time.Second).String() + " ago"
}

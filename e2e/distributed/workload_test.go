package distributed_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sitebus/sitebus/e2e/harness"
	"github.com/sitebus/sitebus/e2e/waldursim"
)

// The roles the workload grants and the group each maps to (the
// ManagedNamespace backend's default role mapping).
const (
	roleAdmin  = "PROJECT.ADMIN"
	roleMember = "PROJECT.MEMBER"
)

// groupOfRole is the suffix of the Keycloak group a role's members are in.
var groupOfRole = map[string]string{roleAdmin: "admin", roleMember: "readwrite"}

type stepKind string

const (
	stepUpdate    stepKind = "Update"
	stepTerminate stepKind = "Terminate"
	stepTeam      stepKind = "team"
	stepFlags     stepKind = "flags"
)

// step is one thing Waldur does to a resource after its create order.
type step struct {
	kind    stepKind
	limits  map[string]int // Update
	user    string         // team: offering username
	role    string         // team: granted role ("" revokes)
	paused  *bool          // flags
	downscl *bool          // flags
}

// resourcePlan is one resource's life: a create order (the team set
// before it is delivered), then its steps in order.
type resourcePlan struct {
	name, slug string
	project    string
	limits     map[string]int
	team       map[string]string // offering username → role
	steps      []step
	// invalid: the slug is no namespace name, so the create must err.
	invalid bool
}

// workload is a mixed batch: creates, updates and terminations of many
// resources, with role changes and pause/downscale flips between them.
type workload struct {
	resources []*resourcePlan
	orders    int
}

// newWorkload draws `orders` orders from rng, each resource in a project
// of its own (projects must be at least orders).
func newWorkload(rng *rand.Rand, orders int, projects []string) *workload {
	w := &workload{}
	invalidAt := rng.IntN(max(orders/2, 1))
	for i := 0; w.orders < orders; i++ {
		r := &resourcePlan{
			name:    fmt.Sprintf("dist-%04d", i),
			project: projects[i%len(projects)],
			limits:  map[string]int{"cpu": 2 + rng.IntN(6), "ram": 2 + rng.IntN(14), "storage": 10 * (1 + rng.IntN(9))},
			team:    map[string]string{"alice01": roleAdmin, "bob01": roleMember},
		}
		r.slug = r.name
		w.orders++
		if i == invalidAt {
			// Upper case and an underscore: no RFC 1123 label.
			r.slug, r.invalid = fmt.Sprintf("Dist_Invalid_%04d", i), true
			w.resources = append(w.resources, r)
			continue
		}
		var middle []step
		if rng.IntN(10) < 4 && w.orders < orders {
			middle = append(middle, step{kind: stepUpdate, limits: map[string]int{"cpu": 2 + rng.IntN(6), "ram": 2 + rng.IntN(14), "storage": 10 * (1 + rng.IntN(9))}})
			w.orders++
		}
		if rng.IntN(2) == 0 {
			middle = append(middle, step{kind: stepTeam, user: "carol01", role: roleMember})
		}
		if rng.IntN(10) < 3 {
			middle = append(middle, step{kind: stepTeam, user: "bob01"})
		} else if rng.IntN(10) < 3 {
			middle = append(middle, step{kind: stepTeam, user: "bob01", role: roleAdmin})
		}
		if rng.IntN(10) < 3 {
			middle = append(middle, step{kind: stepFlags, paused: ptr(true)})
			if rng.IntN(2) == 0 {
				middle = append(middle, step{kind: stepFlags, paused: ptr(false)})
			}
		}
		if rng.IntN(10) < 2 {
			middle = append(middle, step{kind: stepFlags, downscl: ptr(true)})
		}
		rng.Shuffle(len(middle), func(i, j int) { middle[i], middle[j] = middle[j], middle[i] })
		r.steps = middle
		if rng.IntN(10) < 3 && w.orders < orders {
			r.steps = append(r.steps, step{kind: stepTerminate})
			w.orders++
		}
		w.resources = append(w.resources, r)
	}
	return w
}

func ptr[T any](v T) *T { return &v }

// String tells the plan, for a failure message.
func (r *resourcePlan) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (slug %s): Create %v team %v", r.name, r.slug, r.limits, r.team)
	for _, st := range r.steps {
		switch st.kind {
		case stepUpdate:
			fmt.Fprintf(&b, ", Update %v", st.limits)
		case stepTerminate:
			b.WriteString(", Terminate")
		case stepTeam:
			if st.role == "" {
				fmt.Fprintf(&b, ", revoke %s", st.user)
			} else {
				fmt.Fprintf(&b, ", grant %s %s", st.user, st.role)
			}
		case stepFlags:
			if st.paused != nil {
				fmt.Fprintf(&b, ", paused=%v", *st.paused)
			}
			if st.downscl != nil {
				fmt.Fprintf(&b, ", downscaled=%v", *st.downscl)
			}
		}
	}
	return b.String()
}

// orderRecord is one order the driver made, and how it ended.
type orderRecord struct {
	uuid, typ string
	res       *resourcePlan
	wantState string
	state     string // last seen; "" if never settled
}

// outcome is what a resource ended as, after the driver ran its plan.
type outcome struct {
	plan *resourcePlan
	uuid string
	// settled: every step ran and every order settled as expected; only
	// then is the expected platform state known.
	settled bool
	// created: its create order is done (so its groups were made once).
	created    bool
	terminated bool
	limits     map[string]int
	paused     bool
	downscaled bool
	team       map[string]string
}

// driver runs a workload against a site: `workers` resources at a time,
// each through its plan, waiting for each order to settle before the
// next, as Waldur does (one order of a resource at a time).
type driver struct {
	s            *site
	orderTimeout time.Duration
	// finished counts orders settled (or given up on): the chaos schedule
	// fires on it.
	finished atomic.Int64
	// unpublished counts events the simulator could not hand to RabbitMQ
	// (broker down): Waldur lost them, and sitebus's polling must make up.
	unpublished atomic.Int64

	mu       sync.Mutex
	orders   []*orderRecord
	outcomes []*outcome
	errs     []error
}

func (d *driver) fail(err error) {
	d.mu.Lock()
	d.errs = append(d.errs, err)
	d.mu.Unlock()
}

// run drives every resource; it returns when all are through.
func (d *driver) run(ctx context.Context, w *workload, workers int) {
	work := make(chan *resourcePlan)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for r := range work {
				o := d.resource(ctx, r)
				d.mu.Lock()
				d.outcomes = append(d.outcomes, o)
				d.mu.Unlock()
			}
		})
	}
	for _, r := range w.resources {
		work <- r
	}
	close(work)
	wg.Wait()
}

// resource runs one plan; an order that does not settle as expected ends it.
func (d *driver) resource(ctx context.Context, r *resourcePlan) *outcome {
	o := &outcome{plan: r, limits: r.limits, team: map[string]string{}}
	res, err := d.s.Admin.CreateOrder(ctx, waldursim.CreateOrderRequest{ResourceName: r.name, ResourceSlug: r.slug,
		ProjectUUID: r.project, Limits: r.limits, Silent: true})
	if err != nil {
		d.fail(fmt.Errorf("create order for %s: %w", r.name, err))
		return o
	}
	o.uuid = res.Resource.UUID
	for user, role := range r.team {
		if _, err := d.s.Admin.SetTeam(ctx, waldursim.TeamRequest{ResourceUUID: o.uuid, Member: harness.Member(user, role), Granted: true, Silent: true}); err != nil {
			d.fail(fmt.Errorf("team of %s: %w", r.name, err))
			return o
		}
		o.team[user] = role
	}
	want := "done"
	if r.invalid {
		want = "erred"
	}
	if err := d.published(harness.PublishOrderEvent(ctx, d.s.Admin, d.s.OfferingHex, res.Order.UUID, "deliver-"+res.Order.UUID)); err != nil {
		d.fail(fmt.Errorf("deliver create order of %s: %w", r.name, err))
		return o
	}
	if !d.settle(ctx, res.Order.UUID, "Create", r, want) || r.invalid {
		return o
	}
	o.created = true
	for _, st := range r.steps {
		switch st.kind {
		case stepUpdate, stepTerminate:
			res, err := d.s.Admin.CreateOrder(ctx, waldursim.CreateOrderRequest{Type: string(st.kind), ResourceUUID: o.uuid, Limits: st.limits})
			if err = d.published(err); err != nil {
				d.fail(fmt.Errorf("%s order for %s: %w", st.kind, r.name, err))
				return o
			}
			if !d.settle(ctx, res.Order.UUID, string(st.kind), r, "done") {
				return o
			}
			if st.kind == stepUpdate {
				o.limits = st.limits
			} else {
				o.terminated = true
			}
		case stepTeam:
			m := harness.Member(st.user, st.role)
			if st.role == "" {
				m.Role = o.team[st.user]
			}
			_, err := d.s.Admin.SetTeam(ctx, waldursim.TeamRequest{ResourceUUID: o.uuid, Member: m, Granted: st.role != ""})
			if err = d.published(err); err != nil {
				d.fail(fmt.Errorf("team change of %s: %w", r.name, err))
				return o
			}
			if st.role == "" {
				delete(o.team, st.user)
			} else {
				o.team[st.user] = st.role
			}
		case stepFlags:
			_, err := d.s.Admin.SetFlags(ctx, o.uuid, waldursim.FlagsRequest{Paused: st.paused, Downscaled: st.downscl})
			if err = d.published(err); err != nil {
				d.fail(fmt.Errorf("flags of %s: %w", r.name, err))
				return o
			}
			if st.paused != nil {
				o.paused = *st.paused
			}
			if st.downscl != nil {
				o.downscaled = *st.downscl
			}
		}
	}
	o.settled = true
	return o
}

// published: the simulator made the change but could not publish its
// event (502: RabbitMQ down) is Waldur losing an event, which sitebus's
// polling must make up for; anything else is an error.
func (d *driver) published(err error) error {
	var ae *waldursim.AdminError
	if errors.As(err, &ae) && ae.Status == http.StatusBadGateway {
		d.unpublished.Add(1)
		return nil
	}
	return err
}

// settle waits for the order to leave the pending states and records it;
// false when it did not end in want.
func (d *driver) settle(ctx context.Context, uuid, typ string, r *resourcePlan, want string) bool {
	rec := &orderRecord{uuid: uuid, typ: typ, res: r, wantState: want}
	d.mu.Lock()
	d.orders = append(d.orders, rec)
	d.mu.Unlock()
	defer d.finished.Add(1)
	wctx, cancel := context.WithTimeout(ctx, d.orderTimeout)
	defer cancel()
	o, err := d.s.Admin.WaitOrder(wctx, uuid, "done", "erred")
	if err != nil {
		d.fail(fmt.Errorf("%s order %s of %s not settled within %s: %w", typ, uuid, r.name, d.orderTimeout, err))
		return false
	}
	d.mu.Lock()
	rec.state = o.State
	d.mu.Unlock()
	if o.State != want {
		d.fail(fmt.Errorf("%s order %s of %s %s (%s), want %s", typ, uuid, r.name, o.State, o.ErrorMessage, want))
		return false
	}
	return true
}

// wantQuota is the ManagedNamespace quota for limits under the flags:
// paused zeroes cpu, memory and storage; downscaled sets them to the
// minimum; pause wins.
func wantQuota(limits map[string]int, paused, downscaled bool) map[string]string {
	q := map[string]string{"cpu": strconv.Itoa(limits["cpu"]), "memory": strconv.Itoa(limits["ram"]) + "Gi", "storage": strconv.Itoa(limits["storage"]) + "Gi"}
	switch {
	case paused:
		q = map[string]string{"cpu": "0", "memory": "0Gi", "storage": "0Gi"}
	case downscaled:
		q = map[string]string{"cpu": "1", "memory": "1Gi", "storage": "1Gi"}
	}
	return q
}

// wantGroups is each live resource's three groups with their members.
func wantGroups(outcomes []*outcome) map[string][]string {
	out := map[string][]string{}
	for _, o := range outcomes {
		if !o.settled || o.terminated || o.plan.invalid {
			continue
		}
		for _, suffix := range []string{"admin", "readwrite", "readonly"} {
			out["ns_"+o.plan.slug+"_"+suffix] = []string{}
		}
		for user, role := range o.team {
			g := "ns_" + o.plan.slug + "_" + groupOfRole[role]
			out[g] = append(out[g], user)
		}
	}
	return out
}

// describe lists a mismatch briefly: at most n entries.
func describe(items []string, n int) string {
	if len(items) > n {
		return strings.Join(items[:n], "; ") + fmt.Sprintf("; and %d more", len(items)-n)
	}
	return strings.Join(items, "; ")
}

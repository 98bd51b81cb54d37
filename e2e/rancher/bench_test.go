package rancher_test

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sitebus/sitebus/e2e/harness"
	"github.com/sitebus/sitebus/e2e/waldursim"
)

// BenchmarkRancherCreateOrderLatency measures, over 200 Create orders of a
// Rancher offering sent one after another through the whole system
// (simulated Waldur → RabbitMQ → sitebus process → Rancher simulator on a
// real kube-apiserver, Keycloak simulator → Waldur), the time from the
// order's STOMP frame being published to Waldur receiving set_state_done,
// and counts the Waldur, Rancher and Keycloak calls per order from the
// simulators' call logs (only calls made after the first order was sent, so
// start-up calls are not counted). Every resource has a team of two, in the
// fixture's one Waldur project: the first order makes the Keycloak groups,
// the others find them. "keycloak" runs the rancher-project-create saga,
// "direct" the direct path (keycloak_enabled: false). Run with
// `make bench-orders`.
func BenchmarkRancherCreateOrderLatency(b *testing.B) {
	for _, v := range []struct {
		name string
		opts siteOptions
	}{{"keycloak", siteOptions{Keycloak: true}}, {"direct", siteOptions{}}} {
		b.Run(v.name, func(b *testing.B) { benchRancherCreate(b, v.opts) })
	}
}

func benchRancherCreate(b *testing.B, opts siteOptions) {
	const orders = 200
	s := newSiteWith(b, opts)
	team := []waldursim.TeamMember{member("alice01", "PROJECT.ADMIN"), member("bob01", "PROJECT.MEMBER")}
	var samples []harness.OrderStart
	var first time.Time
	b.ResetTimer()
	for i := range orders {
		// The order and team are made silently; the clock starts when
		// the order's frame is published.
		res := harness.CreateOrderSilent(b, s.Admin, fmt.Sprintf("lat-%03d", i), map[string]int{"cpu": 1, "ram": 2, "storage": 5, "gpu": 1}, team...)
		start := time.Now()
		if i == 0 {
			first = start
		}
		harness.DeliverOrder(b, s.Admin, offeringHex, res.Order.UUID)
		samples = append(samples, harness.OrderStart{UUID: res.Order.UUID, Start: start})
		if o := s.WaitOrder(res.Order.UUID, "done", "erred"); o.State != "done" {
			b.Fatalf("order %d: %s (%s)\n%s", i, o.State, o.ErrorMessage, s.Sitebus.Tail(40))
		}
	}
	b.StopTimer()

	wcalls, err := s.Admin.Calls(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	var waldur []call
	doneAt := map[string]time.Time{}
	for _, c := range wcalls {
		if !strings.HasPrefix(c.Path, "/api/") || c.Time.Before(first) {
			continue
		}
		waldur = append(waldur, call{"waldur", c.Time, c.Method, c.Path})
		if strings.HasSuffix(c.Path, "/set_state_done/") {
			doneAt[strings.ReplaceAll(strings.Split(c.Path, "/")[3], "-", "")] = c.Time
		}
	}
	var rancher, keycloak []call
	for _, c := range s.Rancher.Calls() {
		if !c.Time.Before(first) {
			p := c.Path
			if c.Query != "" {
				p += "?" + c.Query
			}
			rancher = append(rancher, call{"rancher", c.Time, c.Method, p})
		}
	}
	for _, c := range s.Keycloak.Calls() {
		if !c.Time.Before(first) {
			keycloak = append(keycloak, call{"keycloak", c.Time, c.Method, c.Path})
		}
	}

	lat := harness.Latencies(b, samples, doneAt)
	p := func(q float64) time.Duration { return lat[int(q*float64(len(lat)-1))] }
	per := func(cs []call) float64 { return float64(len(cs)) / orders }
	b.ReportMetric(float64(p(0.50).Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(p(0.99).Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(lat[len(lat)-1].Microseconds())/1000, "max-ms")
	b.ReportMetric(per(waldur), "waldur-calls/order")
	b.ReportMetric(per(rancher), "rancher-calls/order")
	b.ReportMetric(per(keycloak), "keycloak-calls/order")
	fmt.Printf("rancher create order (%s), STOMP frame → set_state_done, %d orders, team of 2: p50 %s, p99 %s, max %s; per order %.2f Waldur, %.2f Rancher, %.2f Keycloak calls\n",
		b.Name(), orders, p(0.5).Round(100*time.Microsecond), p(0.99).Round(100*time.Microsecond), lat[len(lat)-1].Round(100*time.Microsecond),
		per(waldur), per(rancher), per(keycloak))

	// The calls of the first order (which makes the Keycloak groups) and
	// of the last (which finds them), in time order, with the step of the
	// rancher-project-create saga each falls into.
	all := slices.Concat(waldur, rancher, keycloak)
	slices.SortStableFunc(all, func(a, b call) int { return a.t.Compare(b.t) })
	for _, n := range []int{0, orders - 1} {
		from := samples[n].Start
		to := doneAt[strings.ReplaceAll(samples[n].UUID, "-", "")]
		counts := map[string]int{}
		var lines []string
		for _, c := range all {
			if c.t.Before(from) || c.t.After(to) {
				continue
			}
			counts[c.system]++
			lines = append(lines, fmt.Sprintf("    %-8s %-6s %s", c.system, c.method, normalize(c.path)))
		}
		fmt.Printf("  order %d: %d Waldur, %d Rancher, %d Keycloak calls\n%s\n", n+1, counts["waldur"], counts["rancher"], counts["keycloak"], strings.Join(lines, "\n"))
	}
}

type call struct {
	system       string
	t            time.Time
	method, path string
}

var idSegment = regexp.MustCompile(`[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}|p-[a-z0-9]{5}|prtb-[a-z0-9]+|r[0-9a-f]{6}-lat-[0-9]{3}`)

// normalize replaces ids and per-order names in a path with placeholders.
func normalize(p string) string { return idSegment.ReplaceAllString(p, "{id}") }

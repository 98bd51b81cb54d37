package bridge_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sitebus/sitebus/e2e/harness"
	"github.com/sitebus/sitebus/e2e/rabbitmq"
	"github.com/sitebus/sitebus/e2e/waldursim"
)

// sitebusCmd runs a sitebus tool command and returns its combined output.
func sitebusCmd(t *testing.T, wantOK bool, args ...string) string {
	t.Helper()
	bin, err := harness.SitebusBinary()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, args...).CombinedOutput()
	if (err == nil) != wantOK {
		t.Fatalf("sitebus %s: err = %v, want ok=%v\n%s", strings.Join(args, " "), err, wantOK, out)
	}
	return string(out)
}

func TestOperatorToolsOnARunningSite(t *testing.T) {
	e := newEnv(t)
	q := e.waitConsumer("order")
	if _, err := e.Admin.PublishRaw(ctx(t), waldursim.RawEventRequest{OfferingUUID: offeringHex, ObjectType: "order", Body: "not json", MessageID: "tool-bad"}); err != nil {
		t.Fatal(err)
	}
	res, err := e.Admin.CreateOrder(ctx(t), waldursim.CreateOrderRequest{ResourceName: "tools"})
	if err != nil {
		t.Fatal(err)
	}
	good := res.Published[0].MessageID
	e.waitQueue(q, "frames acked", func(qi rabbitmq.QueueInfo) bool { return qi.Messages == 0 })
	harness.Eventually(t, 30*time.Second, "a dead letter and an event", func() bool {
		return len(e.reader.DeadLetters(t)) == 1 && len(e.eventsWithID(good)) == 1
	})
	nurl := "--nats-url=" + e.Sitebus.NATSURL

	t.Run("dlq list shows the reason and source", func(t *testing.T) {
		out := sitebusCmd(t, true, "dlq", "list", nurl)
		if !strings.Contains(out, "stomp-bridge") || !strings.Contains(out, "order body is not a JSON object") {
			t.Errorf("dlq list:\n%s", out)
		}
	})
	seq := regexp.MustCompile(`(?m)^(\d+)\s`).FindStringSubmatch(sitebusCmd(t, true, "dlq", "list", nurl))
	if seq == nil {
		t.Fatal("no sequence in dlq list")
	}
	t.Run("dlq show prints the frame body verbatim", func(t *testing.T) {
		out := sitebusCmd(t, true, "dlq", "show", seq[1], nurl)
		if !strings.Contains(out, "body (verbatim): not json") || !strings.Contains(out, "reason:") {
			t.Errorf("dlq show:\n%s", out)
		}
	})
	t.Run("replay dry run lists without publishing", func(t *testing.T) {
		before := len(e.reader.Events(t, orderSubject))
		out := sitebusCmd(t, true, "replay", "--subject", "waldur.*.order", "--from-seq", "1", "--dry-run", nurl)
		if !strings.Contains(out, "would replay seq") || len(e.reader.Events(t, orderSubject)) != before {
			t.Errorf("dry run published or listed nothing (%d events before):\n%s", before, out)
		}
	})
	t.Run("replay re-delivers copies marked as replays", func(t *testing.T) {
		before := len(e.reader.Events(t, orderSubject))
		out := sitebusCmd(t, true, "replay", "--subject", "waldur.*.order", "--since", "1h", nurl)
		if after := len(e.reader.Events(t, orderSubject)); after != 2*before {
			t.Errorf("after replay %d events, want %d:\n%s", after, 2*before, out)
		}
	})
	t.Run("replay refuses an ambiguous request", func(t *testing.T) {
		out := sitebusCmd(t, false, "replay", "--subject", "waldur.>", nurl)
		if !strings.Contains(out, "exactly one of --since or --from-seq") {
			t.Errorf("replay without a start:\n%s", out)
		}
	})
	t.Run("dlq retry puts the letter back on its subject", func(t *testing.T) {
		out := sitebusCmd(t, true, "dlq", "retry", seq[1], nurl)
		if !strings.Contains(out, "re-published as SITEBUS_EVENTS") || len(e.eventsWithID("dlq-retry:"+seq[1])) != 1 || len(e.reader.DeadLetters(t)) != 0 {
			t.Errorf("dlq retry:\n%s", out)
		}
	})
	t.Run("dlq purge wants confirmation", func(t *testing.T) {
		out := sitebusCmd(t, false, "dlq", "purge", nurl)
		if !strings.Contains(out, "--yes") {
			t.Errorf("purge without --yes:\n%s", out)
		}
		if out := sitebusCmd(t, true, "dlq", "purge", "--yes", nurl); !strings.Contains(out, "purged 0") {
			t.Errorf("purge:\n%s", out)
		}
	})
	t.Run("metrics and probes answer", func(t *testing.T) {
		if code, _ := e.Sitebus.Get("/healthz"); code != 200 {
			t.Errorf("/healthz = %d", code)
		}
		// The dead-letter counter moves after the letter is stored (which is
		// what the test waited for above): poll, don't read once.
		for _, want := range []string{`sitebus_stomp_connected{object_type="order",offering="` + offeringHex + `"} 1`, "sitebus_bus_dead_lettered_total", "go_goroutines"} {
			harness.Eventually(t, 30*time.Second, "/metrics to show "+want, func() bool {
				_, m := e.Sitebus.Get("/metrics")
				return strings.Contains(m, want)
			})
		}
	})
}

func TestConfigCheckNamesTheBadKey(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("offerings:\n  - name: x\n    waldur_api_url: https://w.example/api/\n    waldur_api_token: t\n    waldur_offering_uuid: nope\n    backend_type: k8s-ut-namespace\n    verfy_ssl: false\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out := sitebusCmd(t, false, "config", "check", "-c", bad)
	for _, want := range []string{`bad.yaml:5: offerings[0] ("x").waldur_offering_uuid`, `warning: offerings[0] ("x").verfy_ssl: unknown key "verfy_ssl" is ignored (did you mean "verify_ssl"?)`} {
		if !strings.Contains(out, want) {
			t.Errorf("config check output lacks %q:\n%s", want, out)
		}
	}
	out = sitebusCmd(t, false, "run", "-c", bad, "--http-addr", "127.0.0.1:0")
	if !strings.Contains(out, "waldur_offering_uuid") {
		t.Errorf("run with a bad config:\n%s", out)
	}
}

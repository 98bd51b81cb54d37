// Package storm_test sends a storm of malformed STOMP frames through a real
// RabbitMQ to a real `sitebus run` process, between valid orders, and
// checks that every valid order is done exactly once, every bad frame is
// parked with its reason, the process stays up with its memory bounded,
// and measures what the storm does to the valid orders' latency.
package storm_test

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/go-stomp/stomp/v3"
	"github.com/go-stomp/stomp/v3/frame"
	"google.golang.org/protobuf/proto"

	"github.com/sitebus/sitebus/e2e/harness"
	"github.com/sitebus/sitebus/e2e/kube"
	"github.com/sitebus/sitebus/e2e/rabbitmq"
	"github.com/sitebus/sitebus/e2e/waldursim"
	sitebusv1 "github.com/sitebus/sitebus/pkg/gen/sitebus/v1"
	"github.com/sitebus/sitebus/services/stompbridge"
)

func TestMain(m *testing.M) { os.Exit(rabbitmq.RunShared(kube.SharedRunner(m))) }

const (
	// maxFrameBody is the bridge's default stomp.max_frame_body.
	maxFrameBody = 1 << 20
	// keptOfOversized is how much of an oversized body its dead letter keeps.
	keptOfOversized = 4 << 10
	// peakRSSGuard bounds sitebus's peak resident memory over the whole
	// storm. It is a guard against unbounded growth (a leak, a queue
	// without a limit), far above what a run needs, not a measure: the
	// figure itself is printed.
	peakRSSGuard = 512 << 20
)

// The storm's size: `make test` runs a small one, `make storm` the full
// 10,000 frames between 200 orders (SITEBUS_STORM_FRAMES,
// SITEBUS_STORM_ORDERS); SITEBUS_STORM_SEED replays a run.
func stormSize(t *testing.T) (frames, orders int, seed uint64) {
	frames, orders, seed = 2000, 40, 23
	for _, v := range []struct {
		env string
		p   *int
	}{{"SITEBUS_STORM_FRAMES", &frames}, {"SITEBUS_STORM_ORDERS", &orders}} {
		if s := os.Getenv(v.env); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n < 1 {
				t.Fatalf("%s=%q is not a positive number", v.env, s)
			}
			*v.p = n
		}
	}
	if s := os.Getenv("SITEBUS_STORM_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("SITEBUS_STORM_SEED=%q: %v", s, err)
		}
		seed = n
	}
	return frames, orders, seed
}

// TestMalformedFrameStorm runs the same number of valid Create orders twice
// on one sitebus: first alone (the baseline), then each one behind its
// share of the storm's bad frames on the same queue. The orders go one at
// a time (the next once the last is done), so both phases load sitebus the
// same way but for the storm, and an order's latency (frame published →
// set_state_done in the simulator's call log) shows what the bad frames
// ahead of and beside it cost.
func TestMalformedFrameStorm(t *testing.T) {
	frames, orders, seed := stormSize(t)
	started := time.Now()
	s := harness.NewSite(t, harness.WithCluster(kube.Shared(t)),
		harness.WithSettings(map[string]any{"namespace_prefix": "storm-"}))
	pid := s.Sitebus.Pid()

	// Baseline: the orders alone.
	base := runOrders(t, s, "base", orders, nil)
	// The storm: the same number of orders, each behind frames/orders bad
	// frames (and some of its own frame again).
	vhost, queue := base.vhost, base.destination
	conn, err := rabbitmq.DialSTOMP(harness.Context(t, time.Minute), s.Broker.STOMPAddr(), s.Broker.AdminUser, s.Broker.AdminPass, vhost)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Disconnect() })
	st := newStorm(seed, s.OfferingHex, frames)
	stormed := runOrders(t, s, "storm", orders, func(i int) func(waldursim.Published) {
		for range st.share(i, orders) {
			st.send(t, conn, queue)
		}
		return func(p waldursim.Published) { st.duplicateValid(t, conn, p) }
	})

	// A frame is acked, and then counted, only after its dead letter or
	// event is stored. The valid frames are the simulator's (an order's
	// pending-provider frame, and its done frame as Mastermind publishes
	// one on set_state_done) and the repeats of them.
	waitFramesAcked(t, s, "dead_lettered", st.sent-st.validRepeats)
	waitFramesAcked(t, s, "", st.sent+2*(len(base.orders)+len(stormed.orders)))

	checkDeadLetters(t, s, st)
	checkDoneOnce(t, s, append(base.orders, stormed.orders...))

	if s.Sitebus.Exited() || s.Sitebus.Pid() != pid {
		t.Fatalf("sitebus restarted or exited during the storm:\n%s", s.Sitebus.Tail(40))
	}
	if out := s.Sitebus.Output(); strings.Contains(out, "panic:") {
		t.Fatalf("sitebus panicked:\n%s", grepLines(out, "panic"))
	}
	hwm := peakRSS(t, pid)
	if hwm > peakRSSGuard {
		t.Errorf("sitebus's peak RSS %d MiB is over the %d MiB guard", hwm>>20, peakRSSGuard>>20)
	}

	baseLat, stormLat := latencies(t, s, base), latencies(t, s, stormed)
	t.Logf("storm (seed %d): %d bad frames sent (%d random, %d truncated, %d oversized, %d wrongly encoded, %d exact repeats), %d of them distinct (as many dead letters); %d+%d valid orders (%d valid frames sent again)",
		seed, st.sent-st.validRepeats, st.kinds[kindRandom], st.kinds[kindTruncated], st.kinds[kindOversized], st.kinds[kindEncoding], st.kinds[kindRepeat],
		len(st.letters), orders, orders, st.validRepeats)
	t.Logf("storm: sitebus peak RSS (VmHWM) %d MiB; orders' latency (frame → set_state_done) without the storm p50 %s p95 %s max %s (phase %s), with it p50 %s p95 %s max %s (phase %s); total %s",
		hwm>>20, pct(baseLat, 0.5), pct(baseLat, 0.95), pct(baseLat, 1), base.took.Round(100*time.Millisecond),
		pct(stormLat, 0.5), pct(stormLat, 0.95), pct(stormLat, 1), stormed.took.Round(100*time.Millisecond),
		time.Since(started).Round(time.Second))
}

// phase is one run of valid orders.
type phase struct {
	orders      []string // order UUIDs, no dashes
	published   map[string]time.Time
	took        time.Duration
	vhost       string
	destination string
}

// runOrders makes n Create orders one after another, each published by the
// simulator to the order queue, waiting for each to be done. before, if
// given, runs ahead of order i (sending the storm's share) and returns what
// to do with the order's published frame.
func runOrders(t *testing.T, s *harness.Site, name string, n int, before func(i int) func(waldursim.Published)) phase {
	t.Helper()
	ph := phase{published: map[string]time.Time{}}
	began := time.Now()
	for i := range n {
		var after func(waldursim.Published)
		if before != nil {
			after = before(i)
		}
		start := time.Now()
		res, err := s.Admin.CreateOrder(harness.Context(t, time.Minute), waldursim.CreateOrderRequest{
			ResourceName: fmt.Sprintf("%s-%03d", name, i), Limits: map[string]int{"cpu": 1, "ram": 2, "storage": 5}})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Published) != 1 {
			t.Fatalf("order %d: %d frames published, want 1", i, len(res.Published))
		}
		p := res.Published[0]
		ph.vhost, ph.destination = p.Vhost, p.Destination
		u := strings.ReplaceAll(res.Order.UUID, "-", "")
		ph.orders = append(ph.orders, u)
		ph.published[u] = start
		if after != nil {
			after(p)
		}
		harness.WaitOrder(t, s.Admin, s.Sitebus, 40, res.Order.UUID, "done")
	}
	ph.took = time.Since(began)
	return ph
}

// Kinds of bad frame.
const (
	kindRandom    = iota // random bytes
	kindTruncated        // a valid order body cut short
	kindOversized        // a valid order body past max_frame_body
	kindEncoding         // an order body in Latin-1, UTF-16 or broken UTF-8
	kindRepeat           // the frame just sent, again, exactly
	kinds
)

// letter is what one distinct bad frame must become: one dead letter.
type letter struct {
	id      string // the frame's x-message-id, "" for none
	kind    int
	size    int
	reasons []string // one of these is in the dead letter's reason
}

// storm makes the bad frames from a seeded generator: the same seed, the
// same frames.
type storm struct {
	rnd          *rand.Rand
	offeringHex  string
	total        int
	sent         int
	kinds        [kinds]int
	validRepeats int
	// letters are the dead letters expected, by letterKey.
	letters map[string]letter
	last    []byte
	lastID  string
}

func newStorm(seed uint64, offeringHex string, total int) *storm {
	return &storm{rnd: rand.New(rand.NewPCG(seed, seed^0x5eed)), offeringHex: offeringHex, total: total, letters: map[string]letter{}}
}

// share is how many bad frames go ahead of order i of n.
func (st *storm) share(i, n int) int { return st.total*(i+1)/n - st.total*i/n }

// letterKey names a distinct bad frame as its dead letter shows it: the
// body it keeps and whether the frame carried its own message id (without
// one, the bridge derives the id from the body, so the same body twice is
// one frame either way).
func letterKey(kept []byte, withID bool) string {
	sum := sha256.Sum256(kept)
	return hex.EncodeToString(sum[:]) + "/" + strconv.FormatBool(withID)
}

func kept(body []byte) []byte { return body[:min(len(body), keptOfOversized)] }

func (st *storm) uuid() string {
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], st.rnd.Uint64())
	binary.LittleEndian.PutUint64(b[8:], st.rnd.Uint64())
	return hex.EncodeToString(b[:])
}

// orderBody is a valid order event for an order no one made.
func (st *storm) orderBody() string {
	return fmt.Sprintf(`{"order_uuid": "%s", "order_state": "pending-provider", "offering_uuid": "%s"}`, st.uuid(), st.offeringHex)
}

const notJSON = "body is not a JSON object"

// next makes one bad frame.
func (st *storm) next() (body []byte, l letter) {
	switch k := st.rnd.IntN(100); {
	case k < 30:
		body = make([]byte, 8+st.rnd.IntN(2040))
		for i := range body {
			body[i] = byte(st.rnd.Uint32())
		}
		// Random bytes are rarely a JSON object; if they are, what is
		// missing from it is the reason.
		return body, letter{kind: kindRandom, reasons: []string{notJSON, "body is null", "lacks order_uuid", "invalid UUID", "not valid UTF-8"}}
	case k < 60:
		full := st.orderBody()
		return []byte(full[:1+st.rnd.IntN(len(full)-1)]), letter{kind: kindTruncated, reasons: []string{notJSON}}
	case k < 63:
		// Just past the limit, or up to half a MiB past it.
		size := maxFrameBody + 1
		if st.rnd.IntN(2) == 0 {
			size += st.rnd.IntN(512 << 10)
		}
		head := fmt.Sprintf(`{"order_uuid": "%s", "offering_uuid": "%s", "pad": "`, st.uuid(), st.offeringHex)
		body = []byte(head + strings.Repeat("x", size-len(head)-2) + `"}`)
		return body, letter{kind: kindOversized, reasons: []string{fmt.Sprintf("frame body exceeds %d bytes", maxFrameBody)}}
	default:
		valid := `{"order_uuid": "` + st.uuid() + `", "order_state": "pending-provider", "resource_name": "caf` + "\u00e9" + `", "offering_uuid": "` + st.offeringHex + `"}`
		switch st.rnd.IntN(4) {
		case 0: // Latin-1: é as one byte 0xE9
			body = []byte(strings.ReplaceAll(valid, "\u00e9", "\xe9"))
			return body, letter{kind: kindEncoding, reasons: []string{"not valid UTF-8"}}
		case 1: // UTF-16LE with a byte-order mark
			body = utf16Bytes(valid, true)
		case 2: // UTF-16BE without one
			body = utf16Bytes(valid, false)
		default: // a UTF-8 sequence cut in half
			body = []byte(strings.ReplaceAll(valid, "\u00e9", "\xc3"))
			return body, letter{kind: kindEncoding, reasons: []string{"not valid UTF-8"}}
		}
		return body, letter{kind: kindEncoding, reasons: []string{notJSON}}
	}
}

func utf16Bytes(s string, littleWithBOM bool) []byte {
	units := utf16.Encode([]rune(s))
	var out []byte
	if littleWithBOM {
		out = append(out, 0xff, 0xfe)
		for _, u := range units {
			out = binary.LittleEndian.AppendUint16(out, u)
		}
		return out
	}
	for _, u := range units {
		out = binary.BigEndian.AppendUint16(out, u)
	}
	return out
}

// send sends one bad frame to the queue: a new one, or (one time in ten)
// the last one again, exactly. Most carry a message id, as Mastermind's
// frames do; some none, so the bridge derives one.
func (st *storm) send(t *testing.T, conn *stomp.Conn, destination string) {
	t.Helper()
	body, id := st.last, st.lastID
	if st.last != nil && st.rnd.IntN(10) == 0 {
		st.kinds[kindRepeat]++
	} else {
		var l letter
		body, l = st.next()
		l.size = len(body)
		id = ""
		if st.rnd.IntN(5) != 0 {
			sum := sha256.Sum256(body)
			id = "storm-" + hex.EncodeToString(sum[:12])
		}
		key := letterKey(kept(body), id != "")
		// A body made twice (a truncation before the order's UUID) is the
		// same frame again: one dead letter.
		if _, again := st.letters[key]; !again {
			l.id = id
			st.letters[key] = l
		}
		st.kinds[l.kind]++
		st.last, st.lastID = body, id
	}
	if err := sendFrame(conn, destination, body, id); err != nil {
		t.Fatalf("send bad frame %d: %v", st.sent, err)
	}
	st.sent++
}

func sendFrame(conn *stomp.Conn, destination string, body []byte, id string) error {
	opts := []func(*frame.Frame) error{stomp.SendOpt.Header("persistent", "true")}
	if id != "" {
		opts = append(opts, stomp.SendOpt.Header("x-message-id", id))
	}
	return conn.Send(destination, "application/json", body, opts...)
}

// duplicateValid sends a valid order's frame again, one time in four: with
// its message id (the bus stores it once) or without (a second event, which
// must not make a second transition in Waldur).
func (st *storm) duplicateValid(t *testing.T, conn *stomp.Conn, p waldursim.Published) {
	t.Helper()
	switch st.rnd.IntN(8) {
	case 0:
		if err := sendFrame(conn, p.Destination, []byte(p.Body), p.MessageID); err != nil {
			t.Fatal(err)
		}
	case 1:
		if err := sendFrame(conn, p.Destination, []byte(p.Body), ""); err != nil {
			t.Fatal(err)
		}
	default:
		return
	}
	st.validRepeats++
	st.sent++
}

// waitFramesAcked waits until the bridge has acked n order frames with
// outcome ("" for any), and fails t if it acks more.
func waitFramesAcked(t *testing.T, s *harness.Site, outcome string, n int) {
	t.Helper()
	prefix := `sitebus_stomp_frames_total{object_type="order",outcome="` + outcome
	var got float64
	harness.Eventually(t, 5*time.Minute, fmt.Sprintf("the bridge to ack %d frames %s", n, outcome), func() bool {
		got = 0
		_, m := s.Sitebus.Get("/metrics")
		for _, l := range strings.Split(m, "\n") {
			if strings.HasPrefix(l, prefix) {
				f := strings.Fields(l)
				v, _ := strconv.ParseFloat(f[len(f)-1], 64)
				got += v
			}
		}
		return got >= float64(n)
	})
	if got != float64(n) {
		t.Errorf("the bridge acked %v frames %s, %d were sent", got, outcome, n)
	}
}

// checkDeadLetters reads the dead-letter stream: one letter for each
// distinct bad frame (exact repeats are stored once, by message id), with
// the reason of its kind, and none for a valid frame.
func checkDeadLetters(t *testing.T, s *harness.Site, st *storm) {
	t.Helper()
	dls := harness.NewReader(t, s.Sitebus.NATSURL).DeadLetters(t)
	seen := map[string]int{}
	for _, dl := range dls {
		var ev sitebusv1.WaldurEvent
		if err := proto.Unmarshal(dl.Data, &ev); err != nil {
			t.Errorf("dead letter %d is not an event: %v", dl.Seq, err)
			continue
		}
		key := letterKey(ev.Body, strings.HasPrefix(ev.MessageId, "storm-"))
		want, ok := st.letters[key]
		if !ok {
			t.Errorf("dead letter %d (source %s, reason %q, %d bytes) is no bad frame sent", dl.Seq, dl.Source, dl.Reason, len(ev.Body))
			continue
		}
		seen[key]++
		if dl.Source != stompbridge.Name || !slices.ContainsFunc(want.reasons, func(r string) bool { return strings.Contains(dl.Reason, r) }) {
			t.Errorf("dead letter %d of a kind-%d frame: source %s, reason %q; want one of %q", dl.Seq, want.kind, dl.Source, dl.Reason, want.reasons)
		}
		if size := dl.Header.Get(stompbridge.HeaderFrameBodySize); size != strconv.Itoa(want.size) {
			t.Errorf("dead letter %d: body size header %q, frame had %d bytes", dl.Seq, size, want.size)
		}
	}
	for key, l := range st.letters {
		if n := seen[key]; n != 1 {
			t.Errorf("a kind-%d bad frame of %d bytes (message id %q) has %d dead letters, want 1", l.kind, l.size, l.id, n)
		}
	}
	if len(dls) != len(st.letters) {
		t.Errorf("%d dead letters, %d distinct bad frames sent", len(dls), len(st.letters))
	}
}

// checkDoneOnce reads the simulator's call log: every valid order got
// exactly one set_state_done, and nothing else was set done or erred.
func checkDoneOnce(t *testing.T, s *harness.Site, orders []string) {
	t.Helper()
	calls, err := s.Admin.Calls(harness.Context(t, time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	done := map[string]int{}
	for _, c := range calls {
		if c.Method != "POST" || !strings.HasPrefix(c.Path, "/api/marketplace-orders/") {
			continue
		}
		if strings.HasSuffix(c.Path, "/set_state_done/") || strings.HasSuffix(c.Path, "/set_state_erred/") {
			done[strings.ReplaceAll(strings.Split(c.Path, "/")[3], "-", "")+" "+strings.Split(c.Path, "/")[4]]++
		}
	}
	for _, u := range orders {
		if n := done[u+" set_state_done"]; n != 1 {
			t.Errorf("order %s: %d set_state_done calls, want 1", u, n)
		}
		delete(done, u+" set_state_done")
	}
	for k, n := range done {
		t.Errorf("unexpected %s (%d calls)", k, n)
	}
}

// latencies are each order's time from its frame's publish to its
// set_state_done, sorted.
func latencies(t *testing.T, s *harness.Site, ph phase) []time.Duration {
	t.Helper()
	calls, err := s.Admin.Calls(harness.Context(t, time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	var out []time.Duration
	for _, c := range calls {
		if c.Method != "POST" || !strings.HasSuffix(c.Path, "/set_state_done/") {
			continue
		}
		if start, ok := ph.published[strings.ReplaceAll(strings.Split(c.Path, "/")[3], "-", "")]; ok {
			out = append(out, c.Time.Sub(start))
		}
	}
	slices.Sort(out)
	return out
}

func pct(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[int(q*float64(len(sorted)-1))].Round(100 * time.Microsecond)
}

// peakRSS is the process's peak resident set (VmHWM), in bytes.
func peakRSS(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			if err != nil {
				t.Fatalf("VmHWM %q: %v", v, err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc/<pid>/status")
	return 0
}

func grepLines(text, substr string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

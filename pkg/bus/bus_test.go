package bus_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"google.golang.org/protobuf/proto"

	"github.com/sitebus/sitebus/pkg/bus"
	"github.com/sitebus/sitebus/pkg/bus/bustest"
	sitebusv1 "github.com/sitebus/sitebus/pkg/gen/sitebus/v1"
)

// newBus starts an embedded JetStream server for one test and returns a bus
// with the standard streams.
func newBus(t *testing.T, cfg bus.Config) *bus.Bus { return bustest.New(t, cfg) }

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func event(id string) *sitebusv1.WaldurEvent {
	return &sitebusv1.WaldurEvent{ObjectType: "order", OfferingUuid: "0123456789abcdef0123456789abcdef", Body: []byte(`{"order_uuid": "` + id + `"}`), MessageId: id}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func fastConsumer(name string) bus.ConsumerConfig {
	return bus.ConsumerConfig{
		// Partitioned as the services' consumers are: takes waldur.*.order
		// (as most tests publish) and waldur.*.order.<partition> (where a
		// dead letter of the former is retried).
		Name: name, Stream: bus.EventsStream, FilterSubjects: []string{"waldur.*.order"}, Partitioned: true,
		MaxDeliver: 3, AckWait: 2 * time.Second,
		Backoff: func(int) time.Duration { return 20 * time.Millisecond },
	}
}

func TestHandlerOutcomes(t *testing.T) {
	tests := map[string]struct {
		handler      func(calls int32) error
		wantCalls    int32
		wantDLQ      bool
		reasonSubstr string
	}{
		"success acks after one call":                        {handler: func(int32) error { return nil }, wantCalls: 1},
		"retryable error is retried until it succeeds":       {handler: func(n int32) error { return map[bool]error{true: errors.New("blip")}[n < 2] }, wantCalls: 2},
		"terminal error is dead-lettered without a retry":    {handler: func(int32) error { return bus.Terminal(errors.New("slug is invalid")) }, wantCalls: 1, wantDLQ: true, reasonSubstr: "slug is invalid"},
		"persistent error is dead-lettered after MaxDeliver": {handler: func(int32) error { return errors.New("platform down") }, wantCalls: 3, wantDLQ: true, reasonSubstr: "gave up after 3 attempts: platform down"},
		"panic is retried like an error, then parked":        {handler: func(int32) error { panic("boom") }, wantCalls: 3, wantDLQ: true, reasonSubstr: "handler panic: boom"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			b := newBus(t, bus.Config{})
			ctx := testCtx(t)
			var calls atomic.Int32
			var settled atomic.Bool
			sub, err := bus.Subscribe(ctx, b, fastConsumer("svc"), func(ctx context.Context, ev *sitebusv1.WaldurEvent) error {
				n := calls.Add(1)
				defer func() {
					if n >= 3 {
						settled.Store(true)
					}
				}()
				err := tc.handler(n)
				if err == nil || bus.IsTerminal(err) {
					settled.Store(true)
				}
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { sub.Stop(context.Background()) })
			if _, err := b.Publish(ctx, "waldur.0123456789abcdef0123456789abcdef.order.000", event("a"), bus.WithMsgID("a")); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "handler verdict", settled.Load)
			var dls []bus.DeadLetter
			var ci *jetstream.ConsumerInfo
			waitFor(t, "consumer to settle", func() bool {
				dls, _ = b.DeadLetters(ctx, "", 0)
				info, err := b.JetStream().Consumer(ctx, bus.EventsStream, "svc")
				if err != nil {
					return false
				}
				ci, err = info.Info(ctx)
				return err == nil && ci.NumAckPending == 0 && ci.NumPending == 0 && (len(dls) > 0) == tc.wantDLQ
			})
			// Nothing pending and nothing awaiting an ack: the server will
			// deliver nothing more, so the counts are final. The server's own
			// delivery count catches a redelivery (or a handler run twice for
			// one delivery) without waiting to see whether one comes.
			if got := calls.Load(); got != tc.wantCalls {
				t.Errorf("handler called %d times, want %d", got, tc.wantCalls)
			}
			if got := ci.Delivered.Consumer; got != uint64(tc.wantCalls) {
				t.Errorf("server delivered %d times, want %d", got, tc.wantCalls)
			}
			if !tc.wantDLQ {
				return
			}
			if len(dls) != 1 {
				t.Fatalf("got %d dead letters, want 1", len(dls))
			}
			dl := dls[0]
			if dl.Source != "svc" || dl.Stream != bus.EventsStream || dl.StreamSeq != 1 || dl.Subject != "waldur.0123456789abcdef0123456789abcdef.order.000" {
				t.Errorf("dead letter provenance = %+v", dl)
			}
			if want := map[bool]uint64{true: 1, false: 3}[tc.wantCalls == 1]; dl.Deliveries != want {
				t.Errorf("deliveries = %d, want %d", dl.Deliveries, want)
			}
			if !contains(dl.Reason, tc.reasonSubstr) {
				t.Errorf("reason %q does not contain %q", dl.Reason, tc.reasonSubstr)
			}
			var got sitebusv1.WaldurEvent
			if err := proto.Unmarshal(dl.Data, &got); err != nil || got.MessageId != "a" {
				t.Errorf("dead letter payload = %v, %v; want the original event", &got, err)
			}
		})
	}
}

func contains(s, sub string) bool {
	return len(sub) == 0 || (len(s) >= len(sub) && indexOf(s, sub) >= 0)
}

func indexOf(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}

func TestUndecodablePayloadIsDeadLetteredAtOnce(t *testing.T) {
	b := newBus(t, bus.Config{})
	ctx := testCtx(t)
	var calls atomic.Int32
	sub, err := bus.Subscribe(ctx, b, fastConsumer("svc"), func(context.Context, *sitebusv1.WaldurEvent) error { calls.Add(1); return nil })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sub.Stop(context.Background()) })
	if _, err := b.PublishMsg(ctx, &nats.Msg{Subject: "waldur.x.order.000", Data: []byte{0xff, 0xff, 0xff}}); err != nil {
		t.Fatal(err)
	}
	var dls []bus.DeadLetter
	waitFor(t, "dead letter", func() bool { dls, _ = b.DeadLetters(ctx, "dlq.svc.>", 0); return len(dls) == 1 })
	if calls.Load() != 0 {
		t.Errorf("handler was called for an undecodable payload")
	}
	if !contains(dls[0].Reason, "decode") {
		t.Errorf("reason = %q", dls[0].Reason)
	}
}

func TestPublishDeduplicatesByMsgID(t *testing.T) {
	b := newBus(t, bus.Config{})
	ctx := testCtx(t)
	for i := range 3 {
		ack, err := b.Publish(ctx, "waldur.x.order.000", event("dup"), bus.WithMsgID("frame-1"))
		if err != nil {
			t.Fatal(err)
		}
		if ack.Duplicate != (i > 0) {
			t.Errorf("publish %d: duplicate = %v", i, ack.Duplicate)
		}
	}
	st, _ := b.JetStream().Stream(ctx, bus.EventsStream)
	info, _ := st.Info(ctx)
	if info.State.Msgs != 1 {
		t.Errorf("stream holds %d messages, want 1", info.State.Msgs)
	}
}

func TestEnsureStreamsIsIdempotent(t *testing.T) {
	b := newBus(t, bus.Config{DuplicateWindow: 20 * time.Minute})
	ctx := testCtx(t)
	for range 2 {
		if err := b.EnsureStreams(ctx); err != nil {
			t.Fatal(err)
		}
		if err := b.EnsureCommandStream(ctx, "order"); err != nil {
			t.Fatal(err)
		}
	}
	st, _ := b.JetStream().Stream(ctx, bus.EventsStream)
	info, _ := st.Info(ctx)
	if info.Config.Duplicates != 20*time.Minute || info.Config.Retention != jetstream.LimitsPolicy || info.Config.Storage != jetstream.FileStorage {
		t.Errorf("events stream config = %+v", info.Config)
	}
	cs, err := b.JetStream().Stream(ctx, bus.CommandStream("order"))
	if err != nil {
		t.Fatal(err)
	}
	ci, _ := cs.Info(ctx)
	if ci.Config.Retention != jetstream.WorkQueuePolicy || ci.Config.Subjects[0] != "cmd.order.>" {
		t.Errorf("command stream config = %+v", ci.Config)
	}
}

func TestConfigValidate(t *testing.T) {
	tests := map[string]struct {
		cfg     bus.Config
		wantErr bool
	}{
		"defaults are valid":                      {cfg: bus.Config{}},
		"a duplicate window under 10m is refused": {cfg: bus.Config{DuplicateWindow: 2 * time.Minute}, wantErr: true},
		"six replicas are refused":                {cfg: bus.Config{Replicas: 6}, wantErr: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := bus.New(&nats.Conn{}, tc.cfg)
			if (err != nil) != tc.wantErr {
				t.Errorf("err = %v, wantErr %v", err, tc.wantErr)
			}
		})
	}
}

func TestTraceContextCrossesTheBus(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	b := newBus(t, bus.Config{TracerProvider: tp})
	ctx := testCtx(t)
	done := make(chan string, 1)
	sub, err := bus.Subscribe(ctx, b, fastConsumer("svc"), func(ctx context.Context, _ *sitebusv1.WaldurEvent) error {
		d, _ := bus.DeliveryFromContext(ctx)
		done <- d.Header.Get("traceparent")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sub.Stop(context.Background()) })
	pctx, root := tp.Tracer("test").Start(ctx, "frame received")
	if _, err := b.Publish(pctx, "waldur.x.order.000", event("t")); err != nil {
		t.Fatal(err)
	}
	root.End()
	if tp := <-done; tp == "" {
		t.Fatal("no lowercase traceparent header on the delivered message")
	}
	waitFor(t, "process span", func() bool {
		for _, s := range rec.Ended() {
			if s.Name() == "process waldur.x.order.000" {
				return true
			}
		}
		return false
	})
	for _, s := range rec.Ended() {
		if s.SpanContext().TraceID() != root.SpanContext().TraceID() {
			t.Errorf("span %q has trace %s, want %s", s.Name(), s.SpanContext().TraceID(), root.SpanContext().TraceID())
		}
	}
}

func TestReplayRedeliversCopiesMarkedAsReplays(t *testing.T) {
	b := newBus(t, bus.Config{})
	ctx := testCtx(t)
	for i := range 3 {
		if _, err := b.Publish(ctx, "waldur.x.order.000", event(fmt.Sprint(i)), bus.WithMsgID(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.Publish(ctx, "waldur.x.resource", event("r")); err != nil {
		t.Fatal(err)
	}
	n, err := b.Replay(ctx, bus.ReplayOptions{Subject: "waldur.*.order", FromSeq: 2, DryRun: true}, nil)
	if err != nil || n != 2 {
		t.Fatalf("dry run visited %d, %v; want 2", n, err)
	}
	st, _ := b.JetStream().Stream(ctx, bus.EventsStream)
	if info, _ := st.Info(ctx); info.State.Msgs != 4 {
		t.Fatalf("dry run published: stream has %d messages", info.State.Msgs)
	}
	var seen []bus.Replayed
	n, err = b.Replay(ctx, bus.ReplayOptions{Subject: "waldur.*.order", FromSeq: 2}, func(r bus.Replayed) { seen = append(seen, r) })
	if err != nil || n != 2 {
		t.Fatalf("replay visited %d, %v; want 2", n, err)
	}
	if seen[0].Seq != 2 || seen[1].Seq != 3 || seen[0].NewSeq != 5 || seen[1].NewSeq != 6 {
		t.Errorf("replayed = %+v", seen)
	}
	raw, err := st.GetMsg(ctx, 5)
	if err != nil || raw.Header.Get(bus.HeaderReplayOf) != "2" {
		t.Errorf("copy header = %v, %v", raw, err)
	}
	if err := (&bus.ReplayOptions{Subject: "waldur.>"}).Validate(); err == nil {
		t.Error("a replay with neither --since nor --from-seq was accepted")
	}
}

func TestDeadLetterRetryAndPurge(t *testing.T) {
	b := newBus(t, bus.Config{})
	ctx := testCtx(t)
	var fail atomic.Bool
	fail.Store(true)
	var handled atomic.Int32
	sub, err := bus.Subscribe(ctx, b, fastConsumer("svc"), func(context.Context, *sitebusv1.WaldurEvent) error {
		if fail.Load() {
			return bus.Terminal(errors.New("not yet"))
		}
		handled.Add(1)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sub.Stop(context.Background()) })
	for _, id := range []string{"a", "b"} {
		if _, err := b.Publish(ctx, "waldur.x.order.000", event(id), bus.WithMsgID(id)); err != nil {
			t.Fatal(err)
		}
	}
	var dls []bus.DeadLetter
	waitFor(t, "two dead letters", func() bool { dls, _ = b.DeadLetters(ctx, "", 0); return len(dls) == 2 })
	fail.Store(false)
	if _, err := b.RetryDeadLetter(ctx, dls[0].Seq); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "retried message handled", func() bool { return handled.Load() == 1 })
	left, _ := b.DeadLetters(ctx, "", 0)
	if len(left) != 1 || left[0].Seq != dls[1].Seq {
		t.Errorf("after retry the DLQ holds %+v", left)
	}
	n, err := b.PurgeDeadLetters(ctx, "")
	if err != nil || n != 1 {
		t.Errorf("purged %d, %v; want 1", n, err)
	}
	if _, err := b.RetryDeadLetter(ctx, dls[1].Seq); err == nil {
		t.Error("retrying a purged dead letter succeeded")
	}
	if err := b.Park(ctx, bus.DeadLetter{Source: "stomp-bridge", Reason: "not JSON", ID: "f1", Data: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	frames, _ := b.DeadLetters(ctx, "dlq.stomp-bridge.>", 0)
	if len(frames) != 1 {
		t.Fatalf("frames = %+v", frames)
	}
	if _, err := b.RetryDeadLetter(ctx, frames[0].Seq); !errors.Is(err, bus.ErrNotRetryable) {
		t.Errorf("retry of a letter without subject: %v, want ErrNotRetryable", err)
	}
}

func TestLatestDeadLettersAreTheNewest(t *testing.T) {
	b := newBus(t, bus.Config{})
	ctx := testCtx(t)
	if dls, err := b.LatestDeadLetters(ctx, 2); err != nil || len(dls) != 0 {
		t.Fatalf("empty DLQ: %+v, %v", dls, err)
	}
	for _, id := range []string{"f1", "f2", "f3"} {
		if err := b.Park(ctx, bus.DeadLetter{Source: "stomp-bridge", Reason: "not JSON " + id, ID: id, Data: []byte(id)}); err != nil {
			t.Fatal(err)
		}
	}
	tests := map[string]struct {
		n    int
		want []string
	}{
		"the last two":        {2, []string{"not JSON f2", "not JSON f3"}},
		"more than there are": {10, []string{"not JSON f1", "not JSON f2", "not JSON f3"}},
		"zero is all of them": {0, []string{"not JSON f1", "not JSON f2", "not JSON f3"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			dls, err := b.LatestDeadLetters(ctx, tc.n)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, d := range dls {
				got = append(got, d.Reason)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("reasons %q, want %q", got, tc.want)
			}
		})
	}
}

func TestStopWaitsForInFlightHandlers(t *testing.T) {
	b := newBus(t, bus.Config{})
	ctx := testCtx(t)
	started := make(chan struct{})
	var finished atomic.Bool
	sub, err := bus.Subscribe(ctx, b, fastConsumer("svc"), func(context.Context, *sitebusv1.WaldurEvent) error {
		close(started)
		// The behaviour under test: a handler still working when Stop is
		// called. Stop must wait however long it takes, so no duration can
		// make this fail when Stop is right.
		time.Sleep(300 * time.Millisecond)
		finished.Store(true)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Publish(ctx, "waldur.x.order.000", event("s")); err != nil {
		t.Fatal(err)
	}
	<-started
	sub.Stop(context.Background())
	if !finished.Load() {
		t.Error("Stop returned before the in-flight handler finished")
	}
}

func TestALongHandlerKeepsItsMessageWithInProgress(t *testing.T) {
	// A handler running past AckWait must not lose its message to a
	// redelivery: the subscription tells the server "+WPI" (work in
	// progress) every AckWait/3, again and again, for as long as it runs.
	// Counted per delivery (its ack subject), since a redelivered copy
	// would start keep-alives of its own.
	b := newBus(t, bus.Config{})
	ctx := testCtx(t)
	var mu sync.Mutex
	perDelivery := map[string]int{}
	mostForOneDelivery := func() int {
		mu.Lock()
		defer mu.Unlock()
		most := 0
		for _, n := range perDelivery {
			most = max(most, n)
		}
		return most
	}
	acks, err := b.Conn().Subscribe("$JS.ACK."+bus.EventsStream+".svc.>", func(m *nats.Msg) {
		if string(m.Data) == "+WPI" {
			mu.Lock()
			perDelivery[m.Subject]++
			mu.Unlock()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = acks.Unsubscribe() })
	release := make(chan struct{})
	var calls atomic.Int32
	sub, err := bus.Subscribe(ctx, b, fastConsumer("svc"), func(context.Context, *sitebusv1.WaldurEvent) error {
		calls.Add(1)
		<-release
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sub.Stop(context.Background()) })
	// Runs before Stop (cleanups run last first), so a failing test
	// does not leave Stop waiting for the held handler.
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	if _, err := b.Publish(ctx, "waldur.x.order.000", event("long")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the keep-alive sent twice for one delivery", func() bool { return mostForOneDelivery() >= 2 })
	once.Do(func() { close(release) })
	waitFor(t, "the message acked", func() bool {
		info, err := sub.Consumers()[0].Info(ctx)
		return err == nil && info.NumAckPending == 0 && info.AckFloor.Stream == 1
	})
	if calls.Load() < 1 {
		t.Error("the handler never ran")
	}
}

func TestEventSubjectRejectsTokensThatWidenFilters(t *testing.T) {
	for _, bad := range [][2]string{{"a.b", "order"}, {"abc", "*"}, {"abc", ">"}, {"", "order"}, {"abc", "or der"}} {
		if _, err := bus.EventSubject(bad[0], bad[1], "resource:r1"); err == nil {
			t.Errorf("EventSubject(%q, %q) accepted", bad[0], bad[1])
		}
	}
}

func TestValidTokenTakesOnlyLettersDigitsDashAndUnderscore(t *testing.T) {
	for tok, want := range map[string]bool{
		"order": true, "0123456789abcdefABCDEF": true, "a-b_c": true,
		"": false, "a.b": false, "*": false, ">": false, "a b": false, "abc\n": false, "é": false, "a\x00": false,
	} {
		if got := bus.ValidToken(tok); got != want {
			t.Errorf("ValidToken(%q) = %v, want %v", tok, got, want)
		}
	}
}

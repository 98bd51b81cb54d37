package rabbitmq_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-stomp/stomp/v3"

	"github.com/sitebus/sitebus/e2e/rabbitmq"
)

func TestMain(m *testing.M) { os.Exit(rabbitmq.RunShared(m)) }

// waldurQueueArgs are the arguments Mastermind's create_queue declares.
var waldurQueueArgs = map[string]any{
	"x-message-ttl":             3600000,
	"x-max-length":              10000,
	"x-overflow":                "reject-publish-dlx",
	"x-dead-letter-exchange":    "",
	"x-dead-letter-routing-key": "waldur.dlq.messages",
}

func testCtx(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// newVhost creates a fresh vhost the admin may use, deleted at cleanup.
func newVhost(t *testing.T, b *rabbitmq.Broker, name string) string {
	t.Helper()
	ctx := testCtx(t, 30*time.Second)
	m := b.Mgmt()
	if err := m.PutVhost(ctx, name); err != nil {
		t.Fatal(err)
	}
	if err := m.SetPermissions(ctx, name, b.AdminUser, ".*", ".*", ".*"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.DeleteVhost(context.Background(), name) })
	return name
}

func declareWaldurQueue(t *testing.T, b *rabbitmq.Broker, vhost, queue string) {
	t.Helper()
	if err := b.Mgmt().DeclareQueue(testCtx(t, 10*time.Second), vhost, queue, waldurQueueArgs); err != nil {
		t.Fatal(err)
	}
}

func TestDeclareQueueKeepsWaldurArguments(t *testing.T) {
	b := rabbitmq.Shared(t)
	ctx := testCtx(t, 30*time.Second)
	vh := newVhost(t, b, "args-vh")
	q := "subscription_aa_offering_bb_order"
	declareWaldurQueue(t, b, vh, q)

	info, err := b.Mgmt().GetQueue(ctx, vh, q)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{}
	for k, v := range waldurQueueArgs {
		if n, ok := v.(int); ok {
			want[k] = float64(n) // JSON numbers
			continue
		}
		want[k] = v
	}
	if !info.Durable || info.AutoDelete || !reflect.DeepEqual(info.Arguments, want) {
		t.Fatalf("queue = durable %v auto_delete %v args %v; want durable, not auto-delete, args %v",
			info.Durable, info.AutoDelete, info.Arguments, want)
	}
	t.Run("redeclare with other arguments is refused", func(t *testing.T) {
		err := b.Mgmt().DeclareQueue(ctx, vh, q, map[string]any{"x-max-length": 1})
		if err == nil {
			t.Fatal("redeclare with different arguments succeeded")
		}
	})
	t.Run("missing queue is not found", func(t *testing.T) {
		if _, err := b.Mgmt().GetQueue(ctx, vh, "nope"); !rabbitmq.IsNotFound(err) {
			t.Fatalf("err = %v, want 404", err)
		}
	})
}

func TestSTOMPRoundTrip(t *testing.T) {
	b := rabbitmq.Shared(t)
	vh := newVhost(t, b, "stomp-vh")
	dial := map[string]func(t *testing.T) *stomp.Conn{
		"tcp": func(t *testing.T) *stomp.Conn {
			c, err := rabbitmq.DialSTOMP(t.Context(), b.STOMPAddr(), b.AdminUser, b.AdminPass, vh)
			if err != nil {
				t.Fatal(err)
			}
			return c
		},
		"web-stomp": func(t *testing.T) *stomp.Conn {
			c, err := rabbitmq.DialWebSTOMP(testCtx(t, 10*time.Second), b.WebSTOMPURL(), b.AdminUser, b.AdminPass, vh)
			if err != nil {
				t.Fatal(err)
			}
			return c
		},
	}
	for _, tc := range []struct{ name, send, recv string }{
		{"publish over TCP, consume over Web-STOMP", "tcp", "web-stomp"},
		{"publish over Web-STOMP, consume over TCP", "web-stomp", "tcp"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testCtx(t, 60*time.Second)
			q := "roundtrip_" + tc.send
			declareWaldurQueue(t, b, vh, q)
			m := b.Mgmt()

			pub := dial[tc.send](t)
			defer pub.Disconnect()
			body := `{"order_uuid": "abc", "order_state": "pending-provider"}`
			err := pub.Send("/amq/queue/"+q, "application/json", []byte(body),
				stomp.SendOpt.Receipt,
				stomp.SendOpt.Header("persistent", "true"),
				stomp.SendOpt.Header("x-message-id", "m1"))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := m.WaitQueue(ctx, vh, q, func(i rabbitmq.QueueInfo) bool { return i.MessagesReady == 1 }); err != nil {
				t.Fatal(err)
			}

			sub := dial[tc.recv](t)
			defer sub.Disconnect()
			s, err := sub.Subscribe("/amq/queue/"+q, stomp.AckClientIndividual)
			if err != nil {
				t.Fatal(err)
			}
			var msg *stomp.Message
			select {
			case msg = <-s.C:
			case <-ctx.Done():
				t.Fatal("no message")
			}
			if msg.Err != nil {
				t.Fatal(msg.Err)
			}
			if string(msg.Body) != body || msg.Header.Get("x-message-id") != "m1" || msg.ContentType != "application/json" {
				t.Fatalf("got body %q x-message-id %q content-type %q", msg.Body, msg.Header.Get("x-message-id"), msg.ContentType)
			}
			held, err := m.WaitQueue(ctx, vh, q, func(i rabbitmq.QueueInfo) bool {
				return i.MessagesUnacknowledged == 1 && i.Consumers == 1
			})
			if err != nil {
				t.Fatalf("while holding the message: %v", err)
			}
			if held.MessagesReady != 0 {
				t.Errorf("ready = %d while holding the only message", held.MessagesReady)
			}
			if err := sub.Ack(msg); err != nil {
				t.Fatal(err)
			}
			if _, err := m.WaitQueue(ctx, vh, q, func(i rabbitmq.QueueInfo) bool {
				return i.Messages == 0 && i.MessagesUnacknowledged == 0
			}); err != nil {
				t.Fatalf("after ack: %v", err)
			}
		})
	}
}

func TestCloseConnectionsDisconnectsClients(t *testing.T) {
	b := rabbitmq.Shared(t)
	ctx := testCtx(t, 30*time.Second)
	vh := newVhost(t, b, "close-vh")
	c, err := rabbitmq.DialWebSTOMP(ctx, b.WebSTOMPURL(), b.AdminUser, b.AdminPass, vh)
	if err != nil {
		t.Fatal(err)
	}
	defer c.MustDisconnect()
	declareWaldurQueue(t, b, vh, "q")
	s, err := c.Subscribe("/amq/queue/q", stomp.AckAuto)
	if err != nil {
		t.Fatal(err)
	}
	var n int
	for n == 0 { // the connection shows up with the next stats tick
		if n, err = b.Mgmt().CloseConnections(ctx, vh); err != nil {
			t.Fatal(err)
		}
		if ctx.Err() != nil {
			t.Fatal("connection never listed")
		}
		time.Sleep(100 * time.Millisecond)
	}
	select {
	case _, ok := <-s.C:
		if ok {
			// An ERROR frame may arrive first; the channel then closes.
			for range s.C {
			}
		}
	case <-ctx.Done():
		t.Fatal("subscription not terminated after the broker closed the connection")
	}
}

// TestListenersAreLoopbackOnly checks epmd and Erlang distribution too: the
// defaults would listen on 0.0.0.0.
func TestListenersAreLoopbackOnly(t *testing.T) {
	b := rabbitmq.Shared(t)
	listening := tcpListeners(t)
	for name, port := range map[string]int{
		"amqp": b.AMQPPort, "stomp": b.STOMPPort, "web-stomp": b.WebSTOMPPort,
		"management": b.MgmtPort, "dist": b.DistPort, "epmd": b.EPMDPort,
	} {
		addrs := listening[port]
		if len(addrs) == 0 {
			t.Errorf("%s: nothing listens on port %d", name, port)
		}
		for _, a := range addrs {
			if a != "127.0.0.1" && a != "::1" {
				t.Errorf("%s: port %d listens on %s", name, port, a)
			}
		}
	}
}

// tcpListeners maps port -> local addresses in LISTEN state (IPv4 and IPv6).
func tcpListeners(t *testing.T) map[int][]string {
	t.Helper()
	out := map[int][]string{}
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		fh, err := os.Open(f)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(fh)
		sc.Scan() // header
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) < 4 || fields[3] != "0A" { // 0A = LISTEN
				continue
			}
			hostHex, portHex, _ := strings.Cut(fields[1], ":")
			port, _ := strconv.ParseInt(portHex, 16, 32)
			out[int(port)] = append(out[int(port)], decodeProcAddr(hostHex))
		}
		fh.Close()
	}
	return out
}

func decodeProcAddr(h string) string {
	if len(h) == 8 { // little-endian IPv4
		var b [4]byte
		for i := range 4 {
			v, _ := strconv.ParseUint(h[i*2:i*2+2], 16, 8)
			b[3-i] = byte(v)
		}
		return fmt.Sprintf("%d.%d.%d.%d", b[0], b[1], b[2], b[3])
	}
	if h == strings.Repeat("0", 32) {
		return "::"
	}
	switch h {
	case "0000000000000000FFFF00000100007F":
		return "127.0.0.1"
	case "00000000000000000000000001000000":
		return "::1"
	}
	return "ipv6:" + h
}

// A broker that accepts and never answers CONNECT (one still starting) must
// not hold the dialler: cancelling ctx ends the wait.
func TestDialSTOMPEndsWhenTheContextIsCancelled(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	accepted := make(chan net.Conn, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			accepted <- c // held open, never answered
		}
	}()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := rabbitmq.DialSTOMP(ctx, ln.Addr().String(), "u", "p", "/")
		done <- err
	}()
	c := <-accepted
	t.Cleanup(func() { c.Close() })
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("DialSTOMP after cancel: %v, want context.Canceled", err)
	}
}

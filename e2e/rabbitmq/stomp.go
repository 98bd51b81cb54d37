package rabbitmq

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/coder/websocket"
	"github.com/go-stomp/stomp/v3"
)

// STOMPOptions returns the CONNECT options Waldur's peers use: login,
// passcode, host = vhost, STOMP 1.2, 10 s heart-beats.
func STOMPOptions(login, passcode, vhost string) []func(*stomp.Conn) error {
	return []func(*stomp.Conn) error{
		stomp.ConnOpt.Login(login, passcode),
		stomp.ConnOpt.Host(vhost),
		stomp.ConnOpt.AcceptVersion(stomp.V12),
		stomp.ConnOpt.HeartBeat(10*time.Second, 10*time.Second),
	}
}

// DialSTOMP opens a plain TCP STOMP 1.2 connection (how Mastermind
// publishes). ctx bounds the TCP dial and the wait for CONNECTED: a
// broker that is still starting may accept the connection and answer
// nothing, and a caller must not hang on it. go-stomp reads only ctx's
// deadline, so a cancellation closes the connection under it.
func DialSTOMP(ctx context.Context, addr, login, passcode, vhost string) (*stomp.Conn, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	stop := context.AfterFunc(ctx, func() { nc.Close() })
	conn, err := stomp.ConnectWithContext(ctx, nc, STOMPOptions(login, passcode, vhost)...)
	if !stop() {
		return nil, fmt.Errorf("stomp connect %s: %w", addr, ctx.Err())
	}
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("stomp connect %s: %w", addr, err)
	}
	return conn, nil
}

// DialWebSTOMP opens STOMP 1.2 over a WebSocket (subprotocol v12.stomp), the
// transport the site agent uses. ctx bounds the handshake only.
func DialWebSTOMP(ctx context.Context, wsURL, login, passcode, vhost string) (*stomp.Conn, error) {
	ws, resp, err := websocket.Dial(ctx, wsURL, &websocket.DialOptions{Subprotocols: []string{"v12.stomp"}})
	if err != nil {
		return nil, fmt.Errorf("websocket dial %s: %w", wsURL, err)
	}
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	if ws.Subprotocol() != "v12.stomp" {
		_ = ws.Close(websocket.StatusProtocolError, "subprotocol")
		return nil, fmt.Errorf("websocket %s: server chose subprotocol %q", wsURL, ws.Subprotocol())
	}
	ws.SetReadLimit(16 << 20)
	// NetConn's context governs the connection's lifetime, not the dial.
	nc := websocket.NetConn(context.Background(), ws, websocket.MessageText)
	conn, err := stomp.Connect(nc, STOMPOptions(login, passcode, vhost)...)
	if err != nil {
		nc.Close()
		return nil, err
	}
	return conn, nil
}

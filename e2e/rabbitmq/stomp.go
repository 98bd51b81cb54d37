package rabbitmq

import (
	"context"
	"fmt"

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

// DialSTOMP opens a plain TCP STOMP 1.2 connection (how Mastermind publishes).
func DialSTOMP(addr, login, passcode, vhost string) (*stomp.Conn, error) {
	return stomp.Dial("tcp", addr, STOMPOptions(login, passcode, vhost)...)
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

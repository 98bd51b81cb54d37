package stompbridge

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/coder/websocket"
	"github.com/go-stomp/stomp/v3"
)

// Endpoint says how to reach the broker for one subscription.
type Endpoint struct {
	// Transport is "websocket" or "tcp".
	Transport string
	Host      string
	Port      int
	// Path of the Web-STOMP endpoint (websocket only), e.g. /rmqws-stomp.
	Path string
	TLS  bool
	// InsecureSkipVerify disables certificate checks (verify_ssl: false).
	InsecureSkipVerify bool
}

func (e Endpoint) String() string {
	if e.Transport == "tcp" {
		scheme := "stomp"
		if e.TLS {
			scheme = "stomp+ssl"
		}
		return scheme + "://" + net.JoinHostPort(e.Host, strconv.Itoa(e.Port))
	}
	return e.wsURL()
}

func (e Endpoint) wsURL() string {
	scheme := "ws"
	if e.TLS {
		scheme = "wss"
	}
	u := url.URL{Scheme: scheme, Host: net.JoinHostPort(e.Host, strconv.Itoa(e.Port)), Path: e.Path}
	return u.String()
}

// Credentials of one event subscription on Waldur's broker.
type Credentials struct {
	Vhost    string
	Login    string
	Passcode string
}

// dial opens a STOMP 1.2 session. Heartbeats are negotiated both ways so a
// half-dead TCP connection is noticed within a few heartbeat periods.
func dial(ctx context.Context, ep Endpoint, cred Credentials, heartbeat time.Duration) (*stomp.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	raw, err := dialRaw(ctx, ep)
	if err != nil {
		return nil, err
	}
	conn, err := stomp.ConnectWithContext(ctx, raw,
		stomp.ConnOpt.Login(cred.Login, cred.Passcode),
		stomp.ConnOpt.Host(cred.Vhost),
		stomp.ConnOpt.AcceptVersion(stomp.V12),
		stomp.ConnOpt.HeartBeat(heartbeat, heartbeat),
		stomp.ConnOpt.HeartBeatError(heartbeat),
	)
	if err != nil {
		raw.Close()
		return nil, err
	}
	return conn, nil
}

// dialRaw opens the connection STOMP frames travel on: TCP (with TLS) or a
// WebSocket with the v12.stomp subprotocol.
func dialRaw(ctx context.Context, ep Endpoint) (net.Conn, error) {
	tlsCfg := &tls.Config{ServerName: ep.Host, InsecureSkipVerify: ep.InsecureSkipVerify, MinVersion: tls.VersionTLS12} //nolint:gosec // operator's verify_ssl choice
	switch ep.Transport {
	case "tcp":
		d := &net.Dialer{}
		c, err := d.DialContext(ctx, "tcp", net.JoinHostPort(ep.Host, strconv.Itoa(ep.Port)))
		if err != nil {
			return nil, err
		}
		if ep.TLS {
			tc := tls.Client(c, tlsCfg)
			if err := tc.HandshakeContext(ctx); err != nil {
				c.Close()
				return nil, err
			}
			c = tc
		}
		return c, nil
	case "websocket":
		hc := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsCfg, Proxy: http.ProxyFromEnvironment}}
		ws, resp, err := websocket.Dial(ctx, ep.wsURL(), &websocket.DialOptions{HTTPClient: hc, Subprotocols: []string{"v12.stomp"}})
		if err != nil {
			if resp != nil {
				return nil, fmt.Errorf("websocket handshake: HTTP %d: %w", resp.StatusCode, err)
			}
			return nil, err
		}
		ws.SetReadLimit(16 << 20)
		// The net.Conn must outlive the dial context.
		return websocket.NetConn(context.WithoutCancel(ctx), ws, websocket.MessageText), nil
	default:
		return nil, fmt.Errorf("unknown STOMP transport %q", ep.Transport)
	}
}

// ProbeError says which step of Probe failed.
type ProbeError struct {
	// Login is true when the broker was reached and refused the session
	// (CONNECT answered with an ERROR frame, or the connection dropped).
	Login bool
	Err   error
}

func (e *ProbeError) Error() string { return e.Err.Error() }
func (e *ProbeError) Unwrap() error { return e.Err }

// Reach opens and closes the connection the bridge would send STOMP frames
// on, without logging in.
func Reach(ctx context.Context, ep Endpoint) error {
	raw, err := dialRaw(ctx, ep)
	if err != nil {
		return &ProbeError{Err: err}
	}
	return raw.Close()
}

// Probe opens a STOMP session at ep with cred, as the bridge does for each
// subscription, and closes it: it tells an unreachable broker from a
// refused login.
func Probe(ctx context.Context, ep Endpoint, cred Credentials) error {
	raw, err := dialRaw(ctx, ep)
	if err != nil {
		return &ProbeError{Err: err}
	}
	conn, err := stomp.ConnectWithContext(ctx, raw, stomp.ConnOpt.Login(cred.Login, cred.Passcode),
		stomp.ConnOpt.Host(cred.Vhost), stomp.ConnOpt.AcceptVersion(stomp.V12))
	if err != nil {
		raw.Close()
		return &ProbeError{Login: true, Err: err}
	}
	// The session was granted, which is what Probe tells. Web-STOMP may
	// close the socket before the DISCONNECT receipt: not a failure.
	_ = conn.Disconnect()
	return nil
}

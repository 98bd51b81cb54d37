package rabbitmq

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Mgmt is a small client for the RabbitMQ management HTTP API: just what
// Waldur's create_queue path and the e2e tests need.
type Mgmt struct {
	BaseURL    string // e.g. http://127.0.0.1:15672 (without /api)
	User, Pass string
	HTTP       *http.Client
}

// NewMgmt returns a client for the management API at baseURL.
func NewMgmt(baseURL, user, pass string) *Mgmt {
	return &Mgmt{
		BaseURL: strings.TrimRight(baseURL, "/"),
		User:    user,
		Pass:    pass,
		HTTP:    &http.Client{Timeout: 30 * time.Second},
	}
}

// APIError is a non-2xx answer of the management API.
type APIError struct {
	Method, Path string
	Status       int
	Body         string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("rabbitmq mgmt %s %s: HTTP %d: %s", e.Method, e.Path, e.Status, e.Body)
}

// IsNotFound reports whether err is a 404 of the management API.
func IsNotFound(err error) bool {
	var ae *APIError
	return errors.As(err, &ae) && ae.Status == http.StatusNotFound
}

// QueueInfo is the subset of GET /api/queues/{vhost}/{name} tests look at.
// Counters come from the stats database, refreshed every
// collect_statistics_interval (500 ms on a scratch node): poll, don't assume.
type QueueInfo struct {
	Name                   string         `json:"name"`
	Vhost                  string         `json:"vhost"`
	Durable                bool           `json:"durable"`
	AutoDelete             bool           `json:"auto_delete"`
	Arguments              map[string]any `json:"arguments"`
	Messages               int            `json:"messages"`
	MessagesReady          int            `json:"messages_ready"`
	MessagesUnacknowledged int            `json:"messages_unacknowledged"`
	Consumers              int            `json:"consumers"`
}

// Connection is one entry of GET /api/connections.
type Connection struct {
	Name     string `json:"name"`
	Vhost    string `json:"vhost"`
	User     string `json:"user"`
	Protocol string `json:"protocol"`
	PeerHost string `json:"peer_host"`
	PeerPort int    `json:"peer_port"`
}

func seg(s string) string { return url.PathEscape(s) }

func (m *Mgmt) do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		data, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, m.BaseURL+path, body)
	if err != nil {
		return err
	}
	req.SetBasicAuth(m.User, m.Pass)
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := m.HTTP.Do(req)
	if err != nil {
		return fmt.Errorf("rabbitmq mgmt %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		return &APIError{Method: method, Path: path, Status: resp.StatusCode, Body: strings.TrimSpace(string(data))}
	}
	if out != nil {
		return json.Unmarshal(data, out)
	}
	return nil
}

// PutVhost creates the vhost (idempotent).
func (m *Mgmt) PutVhost(ctx context.Context, vhost string) error {
	return m.do(ctx, http.MethodPut, "/api/vhosts/"+seg(vhost), map[string]any{}, nil)
}

// DeleteVhost deletes the vhost and everything in it.
func (m *Mgmt) DeleteVhost(ctx context.Context, vhost string) error {
	return m.do(ctx, http.MethodDelete, "/api/vhosts/"+seg(vhost), nil, nil)
}

// PutUser creates or updates a user; tags are e.g. "administrator".
func (m *Mgmt) PutUser(ctx context.Context, name, password string, tags ...string) error {
	return m.do(ctx, http.MethodPut, "/api/users/"+seg(name),
		map[string]any{"password": password, "tags": strings.Join(tags, ",")}, nil)
}

// DeleteUser deletes a user.
func (m *Mgmt) DeleteUser(ctx context.Context, name string) error {
	return m.do(ctx, http.MethodDelete, "/api/users/"+seg(name), nil, nil)
}

// SetPermissions grants user the configure/write/read regexps on vhost.
func (m *Mgmt) SetPermissions(ctx context.Context, vhost, user, configure, write, read string) error {
	return m.do(ctx, http.MethodPut, "/api/permissions/"+seg(vhost)+"/"+seg(user),
		map[string]string{"configure": configure, "write": write, "read": read}, nil)
}

// DeclareQueue declares a durable queue with the given x-arguments.
// Redeclaring with different arguments fails (HTTP 400), as in RabbitMQ.
func (m *Mgmt) DeclareQueue(ctx context.Context, vhost, name string, args map[string]any) error {
	if args == nil {
		args = map[string]any{}
	}
	return m.do(ctx, http.MethodPut, "/api/queues/"+seg(vhost)+"/"+seg(name),
		map[string]any{"durable": true, "auto_delete": false, "arguments": args}, nil)
}

// DeleteQueue deletes a queue.
func (m *Mgmt) DeleteQueue(ctx context.Context, vhost, name string) error {
	return m.do(ctx, http.MethodDelete, "/api/queues/"+seg(vhost)+"/"+seg(name), nil, nil)
}

// GetQueue returns the queue's properties and (possibly stale) counters.
func (m *Mgmt) GetQueue(ctx context.Context, vhost, name string) (QueueInfo, error) {
	var q QueueInfo
	err := m.do(ctx, http.MethodGet, "/api/queues/"+seg(vhost)+"/"+seg(name), nil, &q)
	return q, err
}

// WaitQueue polls GetQueue until cond holds or ctx ends; it returns the last
// state seen, which makes failures readable.
func (m *Mgmt) WaitQueue(ctx context.Context, vhost, name string, cond func(QueueInfo) bool) (QueueInfo, error) {
	for {
		q, err := m.GetQueue(ctx, vhost, name)
		if err == nil && cond(q) {
			return q, nil
		}
		select {
		case <-ctx.Done():
			if err == nil {
				err = ctx.Err()
			}
			return q, fmt.Errorf("queue %s/%s: condition not met (last %+v): %w", vhost, name, q, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// PurgeQueue drops all ready messages of a queue.
func (m *Mgmt) PurgeQueue(ctx context.Context, vhost, name string) error {
	return m.do(ctx, http.MethodDelete, "/api/queues/"+seg(vhost)+"/"+seg(name)+"/contents", nil, nil)
}

// ListConnections lists client connections; vhost "" means all vhosts.
func (m *Mgmt) ListConnections(ctx context.Context, vhost string) ([]Connection, error) {
	path := "/api/connections"
	if vhost != "" {
		path = "/api/vhosts/" + seg(vhost) + "/connections"
	}
	var cs []Connection
	err := m.do(ctx, http.MethodGet, path, nil, &cs)
	return cs, err
}

// CloseConnections force-closes every client connection of vhost (all
// vhosts when ""), simulating a broker-side disconnect. It returns how many
// it closed; connections vanishing meanwhile are not an error.
func (m *Mgmt) CloseConnections(ctx context.Context, vhost string) (int, error) {
	cs, err := m.ListConnections(ctx, vhost)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, c := range cs {
		err := m.do(ctx, http.MethodDelete, "/api/connections/"+seg(c.Name), nil, nil)
		if err != nil && !IsNotFound(err) {
			return n, err
		}
		if err == nil {
			n++
		}
	}
	return n, nil
}

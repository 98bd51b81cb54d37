package waldursim

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"unicode/utf16"

	"github.com/go-stomp/stomp/v3"

	"github.com/sitebus/sitebus/e2e/rabbitmq"
	"github.com/sitebus/sitebus/e2e/simkit"
)

// QueueArguments are the x-arguments Mastermind's create_queue declares.
// Consumers must therefore use /amq/queue/ destinations: a /queue/ SUBSCRIBE
// would redeclare without them and fail with PRECONDITION_FAILED.
func QueueArguments() map[string]any {
	return map[string]any{
		"x-message-ttl":             3600000,
		"x-max-length":              10000,
		"x-overflow":                "reject-publish-dlx",
		"x-dead-letter-exchange":    "",
		"x-dead-letter-routing-key": "waldur.dlq.messages",
	}
}

// Topic is Mastermind's topic for a subscription queue; the STOMP
// destination is "/amq/queue/" + the topic with "/" replaced by "_".
func Topic(subUUID, offeringUUID, objectType string) string {
	return "subscription/" + subUUID + "/offering/" + offeringUUID + "/" + objectType
}

// MessageID is Mastermind's x-message-id: sha256("vhost:topic:payload")
// hex, first 32 characters.
func MessageID(vhost, topic, payload string) string {
	sum := sha256.Sum256([]byte(vhost + ":" + topic + ":" + payload))
	return hex.EncodeToString(sum[:])[:32]
}

// Published describes one frame sent to RabbitMQ.
type Published struct {
	Vhost       string `json:"vhost"`
	Queue       string `json:"queue"`
	Destination string `json:"destination"`
	Topic       string `json:"topic"`
	MessageID   string `json:"message_id"`
	Body        string `json:"body"`
}

type target struct{ vhost, subUUID, queue string }

// pendingEvent is built under s.mu and published after releasing it.
type pendingEvent struct {
	offering, objectType string
	body                 string // exact payload bytes
	messageID            string // override; "" computes Mastermind's id
	targets              []target
}

// targetsFor lists the subscriptions with a registered queue for
// offering+type. Caller holds s.mu.
func (s *Server) targetsFor(offering, objectType string) []target {
	qs := s.st.queues.List(func(q *SubscriptionQueue) bool { return q.OfferingUUID == offering && q.ObjectType == objectType })
	return simkit.Map(qs, func(q *SubscriptionQueue) target {
		return target{vhost: q.Vhost, subUUID: q.EventSubscriptionUUID, queue: q.QueueName}
	})
}

// newEvent adds "offering_uuid" last, as prepare_messages does. Caller holds s.mu.
func (s *Server) newEvent(offering, objectType string, payload PyObject) *pendingEvent {
	payload = append(PyObject{}, payload...).Set("offering_uuid", offering)
	return &pendingEvent{offering: offering, objectType: objectType, body: payload.Encode(),
		targets: s.targetsFor(offering, objectType)}
}

func (s *Server) orderEvent(o *Order) *pendingEvent {
	res := s.st.resources.Get(o.Resource)
	if res == nil {
		return nil
	}
	return s.newEvent(res.Offering, "order", PyObject{{"order_uuid", o.UUID}, {"order_state", o.State}})
}

// resourceEvent carries a sequence_number, as Mastermind's does: without it
// two flag changes that end in the same state would have the same payload,
// hence the same x-message-id, and the second would be deduplicated away.
func (s *Server) resourceEvent(r *Resource) *pendingEvent {
	var backendID any = r.BackendID
	r.EventSeq++
	return s.newEvent(r.Offering, "resource", PyObject{
		{"resource_uuid", r.UUID}, {"resource_backend_id", backendID},
		{"downscaled", r.Downscaled}, {"restrict_member_access", r.RestrictMemberAccess}, {"paused", r.Paused},
		{"sequence_number", r.EventSeq},
	})
}

func (s *Server) userRoleEvent(r *Resource, m TeamMember, granted bool) *pendingEvent {
	p := s.st.projects[r.Project]
	return s.newEvent(r.Offering, "user_role", PyObject{
		{"user_uuid", m.UUID}, {"user_username", m.Username}, {"project_uuid", p.UUID},
		{"project_name", p.Name}, {"role_name", m.Role}, {"granted", granted},
	})
}

// publish sends ev to every target. Errors are logged and returned; frames
// already sent are reported either way.
func (s *Server) publish(ctx context.Context, ev *pendingEvent) ([]Published, error) {
	if ev == nil {
		return nil, nil
	}
	var out []Published
	var errs []error
	for _, t := range ev.targets {
		topic := Topic(t.subUUID, ev.offering, ev.objectType)
		p := Published{Vhost: t.vhost, Queue: t.queue, Destination: "/amq/queue/" + t.queue, Topic: topic,
			Body: ev.body, MessageID: ev.messageID}
		p.MessageID = cmp.Or(p.MessageID, MessageID(t.vhost, topic, ev.body))
		if s.pub == nil {
			errs = append(errs, errors.New("no RabbitMQ configured"))
			continue
		}
		if err := s.pub.send(ctx, p); err != nil {
			s.log.Error("publish event failed", "queue", t.queue, "vhost", t.vhost, "err", err)
			errs = append(errs, fmt.Errorf("publish to %s: %w", t.queue, err))
			continue
		}
		s.log.Debug("published event", "queue", t.queue, "message_id", p.MessageID, "body", p.Body)
		out = append(out, p)
	}
	return out, errors.Join(errs...)
}

// publisher keeps one STOMP connection per vhost (a STOMP connection is
// bound to the vhost given in CONNECT), logged in as the broker admin.
type publisher struct {
	cfg   RabbitConfig
	log   *slog.Logger
	mgmt  *rabbitmq.Mgmt
	mu    sync.Mutex
	conns map[string]*stomp.Conn
}

func newPublisher(cfg RabbitConfig, log *slog.Logger) *publisher {
	return &publisher{cfg: cfg, log: log, conns: map[string]*stomp.Conn{},
		mgmt: rabbitmq.NewMgmt(cfg.MgmtURL, cfg.AdminUser, cfg.AdminPass)}
}

// send publishes m; ctx (the request that publishes) bounds a connect,
// so a broker that accepts and never answers holds no publish for good.
func (p *publisher) send(ctx context.Context, m Published) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	var err error
	for attempt := 0; attempt < 2; attempt++ {
		c := p.conns[m.Vhost]
		if c == nil {
			c, err = rabbitmq.DialSTOMP(ctx, p.cfg.STOMPAddr, p.cfg.AdminUser, p.cfg.AdminPass, m.Vhost)
			if err != nil {
				continue
			}
			p.conns[m.Vhost] = c
		}
		// No receipt: RabbitMQ would copy the receipt header into the
		// delivered frame, and Mastermind does not ask for one. So, as with
		// Mastermind, a frame to a missing queue is dropped silently; only
		// connection failures surface here.
		err = c.Send(m.Destination, "application/json", []byte(m.Body),
			stomp.SendOpt.Header("persistent", "true"),
			stomp.SendOpt.Header("durable", "true"),
			stomp.SendOpt.Header("auto-delete", "false"),
			stomp.SendOpt.Header("x-message-id", m.MessageID))
		if err == nil {
			return nil
		}
		_ = c.Disconnect()
		delete(p.conns, m.Vhost)
	}
	return err
}

func (p *publisher) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for vh, c := range p.conns {
		_ = c.Disconnect()
		delete(p.conns, vh)
	}
}

// brokerSetupSubscription mirrors Mastermind: vhost = user uuid hex, a
// RabbitMQ user named after the subscription with the API token as
// password, full permissions for it (and the admin publisher) on the vhost.
func (s *Server) brokerSetupSubscription(ctx context.Context, sub *EventSubscription, u *User) error {
	if s.pub == nil {
		return nil
	}
	m := s.pub.mgmt
	vh := sub.UserUUID
	if err := m.PutVhost(ctx, vh); err != nil {
		return err
	}
	if err := m.PutUser(ctx, sub.UUID, u.Token); err != nil {
		return err
	}
	if err := m.SetPermissions(ctx, vh, sub.UUID, ".*", ".*", ".*"); err != nil {
		return err
	}
	return m.SetPermissions(ctx, vh, s.cfg.Rabbit.AdminUser, ".*", ".*", ".*")
}

func (s *Server) brokerDeclareQueue(ctx context.Context, q *SubscriptionQueue) error {
	if s.pub == nil {
		return nil
	}
	return s.pub.mgmt.DeclareQueue(ctx, q.Vhost, q.QueueName, QueueArguments())
}

// PyField is one key of a PyObject.
type PyField struct {
	Key   string
	Value any
}

// PyObject is a JSON object that keeps insertion order and encodes exactly
// like Python's json.dumps with default arguments (", " and ": "
// separators, ensure_ascii). Mastermind's STOMP bodies are such strings, and
// x-message-id hashes them, so byte equality matters.
type PyObject []PyField

// Set appends key (or replaces its value in place, as a dict would).
func (o PyObject) Set(key string, v any) PyObject {
	for i := range o {
		if o[i].Key == key {
			o[i].Value = v
			return o
		}
	}
	return append(o, PyField{key, v})
}

// Encode renders o as json.dumps would.
func (o PyObject) Encode() string {
	var sb strings.Builder
	pyEncode(&sb, o)
	return sb.String()
}

func pyEncode(sb *strings.Builder, v any) {
	switch x := v.(type) {
	case string:
		pyString(sb, x)
	case float64:
		sb.WriteString(pyFloat(x))
	case []string:
		pyList(sb, x)
	case []any:
		pyList(sb, x)
	case PyObject:
		sb.WriteByte('{')
		for i, f := range x {
			if i > 0 {
				sb.WriteString(", ")
			}
			pyString(sb, f.Key)
			sb.WriteString(": ")
			pyEncode(sb, f.Value)
		}
		sb.WriteByte('}')
	case nil, bool, int, int64: // print alike in Go and Python
		b, _ := json.Marshal(x)
		sb.Write(b)
	default:
		panic(fmt.Sprintf("pyjson: unsupported type %T", v))
	}
}

func pyList[T any](sb *strings.Builder, l []T) {
	sb.WriteByte('[')
	for i, e := range l {
		if i > 0 {
			sb.WriteString(", ")
		}
		pyEncode(sb, e)
	}
	sb.WriteByte(']')
}

// pyFloat follows float.__repr__ for the common cases (1.0, 0.5, 1e-07).
func pyFloat(f float64) string {
	s := strconv.FormatFloat(f, 'g', -1, 64)
	if !strings.ContainsAny(s, ".eEn") { // integral: Python prints 1.0
		s += ".0"
	}
	if i := strings.IndexAny(s, "e"); i >= 0 && len(s) > i+2 && s[i+2] != '0' && len(s[i+2:]) == 1 {
		s = s[:i+2] + "0" + s[i+2:] // Python pads exponents to two digits
	}
	return s
}

// pyString escapes like json.dumps(ensure_ascii=True): \" \\ \b \f \n \r \t,
// everything else outside printable ASCII as \uXXXX (surrogate pairs above
// the BMP).
func pyString(sb *strings.Builder, s string) {
	sb.WriteByte('"')
	for _, r := range s {
		esc, short := pyEscapes[r]
		switch {
		case short:
			sb.WriteString(esc)
		case r >= 0x20 && r <= 0x7e:
			sb.WriteRune(r)
		case r > 0xffff:
			r1, r2 := utf16.EncodeRune(r)
			fmt.Fprintf(sb, `\u%04x\u%04x`, r1, r2)
		default:
			fmt.Fprintf(sb, `\u%04x`, r)
		}
	}
	sb.WriteByte('"')
}

var pyEscapes = map[rune]string{'"': `\"`, '\\': `\\`, '\b': `\b`, '\f': `\f`, '\n': `\n`, '\r': `\r`, '\t': `\t`}

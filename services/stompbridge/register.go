package stompbridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sitebus/sitebus/pkg/bus"
	"github.com/sitebus/sitebus/pkg/config"
	"github.com/sitebus/sitebus/pkg/events"
	"github.com/sitebus/sitebus/pkg/waldur"
)

// subscription is one (offering, object type) event subscription: its own
// broker user, vhost and queue.
type subscription struct {
	offering   Offering
	objectType string
	subHex     string
	queue      string
	endpoint   Endpoint
	cred       Credentials
	connected  atomic.Bool
	// lastFrame is when the broker last delivered a frame (Unix ns; 0:
	// never), for the status page: a connected session that has been
	// quiet for hours is worth an operator's look.
	lastFrame atomic.Int64

	// offeringHex and spanName are what ingest needs on every frame,
	// derived once from offering and objectType by newSubscription.
	offeringHex string
	spanName    string
}

// newSubscription is the subscription of one offering to one object type,
// with the per-frame constants worked out.
func newSubscription(o Offering, objectType string) *subscription {
	return &subscription{
		offering:    o,
		objectType:  objectType,
		offeringHex: o.Config.OfferingUUIDHex(),
		spanName:    "stomp frame " + objectType,
	}
}

func (s *subscription) destination() string { return "/amq/queue/" + s.queue }

// queueName is computed locally, as the Python agent does, rather than read
// from create_queue's answer: Mastermind derives it the same way.
func queueName(subHex, offeringHex, objectType string) string {
	return "subscription_" + subHex + "_offering_" + offeringHex + "_" + objectType
}

// subscriptionBucket remembers each event subscription across restarts.
// Reusing it matters: frames left unacked by a crash are redelivered only on
// the queue they were sent to, so a restart must consume that same queue
// (the Python agent registers a new subscription at every start and
// abandons the old queue with whatever it held).
const subscriptionBucket = "sitebus_stomp_subscriptions"

type storedSubscription struct {
	SubscriptionUUID string    `json:"subscription_uuid"`
	UserUUID         string    `json:"user_uuid"`
	Created          time.Time `json:"created"`
}

type subscriptionStore struct{ kv jetstream.KeyValue }

func newSubscriptionStore(ctx context.Context, js jetstream.JetStream, replicas int) (*subscriptionStore, error) {
	kv, err := bus.EnsureKeyValue(ctx, js, jetstream.KeyValueConfig{
		Bucket:      subscriptionBucket,
		Description: "Waldur event subscriptions of the STOMP bridge, reused across restarts",
		Storage:     jetstream.FileStorage,
		History:     5,
		Replicas:    replicas,
	})
	if err != nil {
		return nil, fmt.Errorf("stompbridge: subscription store: %w", err)
	}
	return &subscriptionStore{kv: kv}, nil
}

func (s *subscriptionStore) get(ctx context.Context, key string) (*storedSubscription, error) {
	e, err := s.kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var st storedSubscription
	if err := json.Unmarshal(e.Value(), &st); err != nil {
		return nil, nil // unreadable: register anew
	}
	return &st, nil
}

func (s *subscriptionStore) put(ctx context.Context, key string, st storedSubscription) error {
	data, _ := json.Marshal(st)
	_, err := s.kv.Put(ctx, key, data)
	return err
}

// register does what the Python agent's event mode does at start-up for one
// offering (identity, one service per object type, subscription, queue), but
// reuses the subscription it registered before when Waldur still has it.
func (br *Bridge) register(ctx context.Context, o Offering, store *subscriptionStore) ([]*subscription, error) {
	oc := o.Config
	offHex := oc.OfferingUUIDHex()
	identity, err := o.Waldur.RegisterAgentIdentity(ctx, waldur.AgentIdentityRequest{
		Offering:      oc.WaldurOfferingUUID,
		Name:          "agent-" + oc.WaldurOfferingUUID,
		Version:       br.cfg.AgentVersion,
		LastRestarted: time.Now().UTC(),
		Dependencies:  []waldur.Dependency{{Package: "sitebus", Version: br.cfg.AgentVersion}},
	})
	if err != nil {
		return nil, fmt.Errorf("register agent identity: %w", err)
	}
	ep := br.endpoint(o)
	var subs []*subscription
	for _, objectType := range oc.ObservableObjectTypes() {
		if _, err := o.Waldur.RegisterService(ctx, identity.UUID, "event_process-"+objectType, "event_process"); err != nil {
			return nil, fmt.Errorf("register service event_process-%s: %w", objectType, err)
		}
		key := offHex + "." + objectType
		st, err := store.get(ctx, key)
		if err != nil {
			return nil, fmt.Errorf("read stored subscription %s: %w", key, err)
		}
		if st != nil {
			_, err := o.Waldur.CreateQueue(ctx, st.SubscriptionUUID, oc.WaldurOfferingUUID, objectType)
			switch {
			case err == nil:
				br.log.Info("reusing event subscription", "offering", oc.Name, "object_type", objectType, "subscription", st.SubscriptionUUID)
			case waldur.IsNotFound(err):
				br.log.Info("stored event subscription is gone; registering a new one", "offering", oc.Name, "object_type", objectType)
				st = nil
			default:
				return nil, fmt.Errorf("create queue for %s: %w", objectType, err)
			}
		}
		if st == nil {
			es, err := o.Waldur.RegisterEventSubscription(ctx, identity.UUID, objectType,
				fmt.Sprintf("Event subscription created by sitebus for identity %s", identity.Name))
			if err != nil {
				return nil, fmt.Errorf("register event subscription for %s: %w", objectType, err)
			}
			if _, err := o.Waldur.CreateQueue(ctx, es.UUID, oc.WaldurOfferingUUID, objectType); err != nil {
				return nil, fmt.Errorf("create queue for %s: %w", objectType, err)
			}
			st = &storedSubscription{SubscriptionUUID: es.UUID, UserUUID: es.UserUUID, Created: time.Now().UTC()}
			if err := store.put(ctx, key, *st); err != nil {
				return nil, fmt.Errorf("store subscription %s: %w", key, err)
			}
		}
		subHex := events.HexUUID(st.SubscriptionUUID)
		sub := newSubscription(o, objectType)
		sub.subHex = subHex
		sub.queue = queueName(subHex, offHex, objectType)
		sub.endpoint = ep
		// The broker password is the Waldur token, whatever the REST auth
		// is (the Python agent does the same).
		sub.cred = Credentials{Vhost: events.HexUUID(st.UserUUID), Login: subHex, Passcode: oc.WaldurAPIToken.Reveal()}
		subs = append(subs, sub)
	}
	br.log.Info("registered with Waldur", "offering", oc.Name, "identity", identity.UUID, "subscriptions", len(subs), "endpoint", ep.String())
	return subs, nil
}

func (br *Bridge) endpoint(o Offering) Endpoint { return EndpointFor(br.cfg.Stomp, o.Config) }

// EndpointFor is the broker endpoint the bridge uses for an offering: its
// STOMP websocket settings, or sitebus.stomp's TCP listener when the
// transport is tcp.
func EndpointFor(s config.StompSettings, o *config.Offering) Endpoint {
	host, port, path, useTLS := o.STOMPEndpoint()
	ep := Endpoint{Transport: s.Transport, Host: host, Port: port, Path: path, TLS: useTLS, InsecureSkipVerify: !o.VerifySSL}
	if ep.Transport == "tcp" {
		ep.Host, ep.Port = s.TCPEndpoint(o)
		ep.Path = ""
	}
	return ep
}

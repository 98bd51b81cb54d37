package waldursim

import (
	"context"
	"net/http"
	"slices"

	"github.com/sitebus/sitebus/e2e/simkit"
)

func (s *Server) identityView(base string, id *Identity) Identity {
	cp := *id
	cp.URL = base + "/api/marketplace-site-agent-identities/" + id.UUID + "/"
	cp.Services = simkit.Map(s.st.services.List(func(svc *AgentService) bool { return svc.Identity == id.UUID }),
		func(svc *AgentService) any { return serviceView(base, svc) })
	return cp
}

func serviceView(base string, svc *AgentService) AgentService {
	v := *svc
	v.URL = base + "/api/marketplace-site-agent-services/" + svc.UUID + "/"
	return v
}

// parseIdentity validates the body the agent sends on create and update
// into a new or copied Identity, which the caller drops on an error.
func (s *Server) parseIdentity(body map[string]any, into *Identity) error {
	fe := fieldErrors{}
	off, okOff := uuidField(body, fe, "offering", true)
	if name, ok := strField(body, fe, "name", true, false); ok {
		into.Name = name
	}
	for k, p := range map[string]*string{"version": &into.Version, "last_restarted": &into.LastRestarted,
		"config_file_path": &into.ConfigFilePath, "config_file_content": &into.ConfigFileContent} {
		*p, _ = strField(body, fe, k, false, true)
	}
	deps, _ := typedField[[]any](body, fe, "dependencies", false)
	if okOff && s.st.offerings[off] == nil {
		fe.add("offering", "Object with uuid="+off+" does not exist.")
	}
	into.Offering, into.Dependencies = off, append([]any{}, jsonPlain(deps).([]any)...)
	return fe.err()
}

func (s *Server) createIdentity(r *http.Request, in req) (any, error) {
	id := &Identity{UUID: newUUID(), Created: s.now(), Modified: s.now()}
	if err := s.parseIdentity(in.body, id); err != nil {
		return nil, err
	}
	if s.st.identities.Find(func(other *Identity) bool { return other.Name == id.Name }) != nil {
		return nil, &apiError{Status: http.StatusBadRequest, Body: map[string][]string{
			"name": {"Agent identity with this name already exists."}}}
	}
	s.st.identities.Put(id.UUID, id)
	return simkit.Created(s.identityView(simkit.BaseURL(r), id)), nil
}

func (s *Server) updateIdentity(r *http.Request, in req, id *Identity) (any, error) {
	upd := *id
	if err := s.parseIdentity(in.body, &upd); err != nil {
		return nil, err
	}
	upd.Modified = s.now()
	*id = upd
	return s.identityView(simkit.BaseURL(r), id), nil
}

func (s *Server) registerService(r *http.Request, in req, _ *Identity) (any, error) {
	fe := fieldErrors{}
	name, _ := strField(in.body, fe, "name", true, false)
	mode, _ := strField(in.body, fe, "mode", true, false)
	if err := fe.err(); err != nil {
		return nil, err
	}
	if svc := s.st.services.Find(func(v *AgentService) bool { return v.Identity == in.id && v.Name == name }); svc != nil {
		svc.Mode, svc.State, svc.Modified = mode, "Active", s.now()
		return serviceView(simkit.BaseURL(r), svc), nil
	}
	svc := &AgentService{UUID: newUUID(), Identity: in.id, Name: name, Mode: mode, State: "Active",
		Statistics: map[string]any{}, Processors: []any{}, Created: s.now(), Modified: s.now()}
	s.st.services.Put(svc.UUID, svc)
	return simkit.Created(serviceView(simkit.BaseURL(r), svc)), nil
}

// objectType reads an observable object type, one of Mastermind's.
func objectType(body map[string]any, fe fieldErrors, key string) string {
	t, ok := strField(body, fe, key, true, false)
	if ok && !slices.Contains(objectTypes, t) {
		fe.add(key, `"`+t+`" is not a valid choice.`)
	}
	return t
}

// registerEventSubscription creates an EventSubscription for the caller and,
// like Mastermind's signal handlers, the RabbitMQ vhost (user uuid hex) and
// a RabbitMQ user named after the subscription with the token as password.
func (s *Server) registerEventSubscription(r *http.Request, in req) (any, error) {
	fe := fieldErrors{}
	objType := objectType(in.body, fe, "observable_object_type")
	desc, _ := strField(in.body, fe, "description", false, true)
	if s.st.identities.Get(in.id) == nil {
		return nil, errNotFound
	}
	if err := fe.err(); err != nil {
		return nil, err
	}
	sub := &EventSubscription{
		UUID: newUUID(), UserUUID: in.u.UUID, UserUsername: in.u.Username, UserFullName: in.u.FullName,
		Description: desc, ObservableObjects: []map[string]any{{"object_type": objType}},
		Created: s.now(), Modified: s.now(),
	}
	if err := s.unlocked(func() error { return s.brokerSetupSubscription(context.WithoutCancel(r.Context()), sub, in.u) }); err != nil {
		s.log.Error("rabbitmq setup for event subscription failed", "subscription", sub.UUID, "err", err)
		return nil, detail(http.StatusInternalServerError, "RabbitMQ error: "+err.Error())
	}
	s.st.subs.Put(sub.UUID, sub)
	return simkit.Created(subView(simkit.BaseURL(r), sub)), nil
}

func subView(base string, sub *EventSubscription) EventSubscription {
	v := *sub
	v.URL = base + "/api/event-subscriptions/" + sub.UUID + "/"
	v.User = base + "/api/users/" + sub.UserUUID + "/"
	return v
}

func queueView(base string, q *SubscriptionQueue) SubscriptionQueue {
	v := *q
	v.URL = base + "/api/event-subscription-queues/" + q.UUID + "/"
	v.EventSubscription = base + "/api/event-subscriptions/" + q.EventSubscriptionUUID + "/"
	return v
}

func (s *Server) subscriptions(r *http.Request, in req) []EventSubscription {
	own := s.st.subs.List(func(sub *EventSubscription) bool { return sub.UserUUID == in.u.UUID })
	return simkit.Map(own, func(sub *EventSubscription) EventSubscription { return subView(simkit.BaseURL(r), sub) })
}

// createQueue declares subscription_<sub>_offering_<off>_<type> in the
// user's vhost: 201 when new, 200 with the existing object otherwise.
func (s *Server) createQueue(r *http.Request, in req) (any, error) {
	fe := fieldErrors{}
	off, okOff := uuidField(in.body, fe, "offering_uuid", true)
	objType := objectType(in.body, fe, "object_type")
	sub := s.st.subs.Get(in.id)
	if sub == nil || sub.UserUUID != in.u.UUID { // others' are 404: the queryset is filtered by user
		return nil, errNotFound
	}
	if okOff && s.st.offerings[off] == nil {
		fe.add("offering_uuid", "Offering not found.")
	}
	if err := fe.err(); err != nil {
		return nil, err
	}
	if q := s.st.queues.Find(func(q *SubscriptionQueue) bool {
		return q.EventSubscriptionUUID == sub.UUID && q.OfferingUUID == off && q.ObjectType == objType
	}); q != nil {
		return queueView(simkit.BaseURL(r), q), nil
	}
	q := &SubscriptionQueue{
		UUID: newUUID(), EventSubscriptionUUID: sub.UUID, OfferingUUID: off, ObjectType: objType,
		QueueName: QueueName(sub.UUID, off, objType), Vhost: sub.UserUUID, Created: s.now(),
	}
	if err := s.unlocked(func() error { return s.brokerDeclareQueue(context.WithoutCancel(r.Context()), q) }); err != nil {
		s.log.Error("declare queue failed", "queue", q.QueueName, "err", err)
		return nil, detail(http.StatusInternalServerError, "RabbitMQ error: "+err.Error())
	}
	s.st.queues.Put(q.UUID, q)
	return simkit.Created(queueView(simkit.BaseURL(r), q)), nil
}

// QueueName is Mastermind's (and the agent's) per-subscription queue name.
func QueueName(subUUID, offeringUUID, objectType string) string {
	return "subscription_" + subUUID + "_offering_" + offeringUUID + "_" + objectType
}

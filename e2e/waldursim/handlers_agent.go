package waldursim

import (
	"context"
	"net/http"
	"slices"

	"github.com/sitebus/sitebus/e2e/simkit"
)

func identityURL(base, id string) string {
	return base + "/api/marketplace-site-agent-identities/" + id + "/"
}

func (s *Server) identityView(base string, id *Identity) map[string]any {
	cp := *id
	cp.URL = identityURL(base, id.UUID)
	cp.Services = []any{}
	for _, svc := range s.st.services {
		if svc.Identity == id.UUID {
			v := *svc
			v.URL = base + "/api/marketplace-site-agent-services/" + svc.UUID + "/"
			cp.Services = append(cp.Services, v)
		}
	}
	return toMap(cp)
}

func (s *Server) listIdentities(w http.ResponseWriter, r *http.Request, _ *User) error {
	fe := fieldErrors{}
	offerings := queryUUIDs(r, fe, "offering_uuid")
	if err := fe.err(); err != nil {
		return err
	}
	name, hasName := r.URL.Query()["name"]
	s.mu.Lock()
	defer s.mu.Unlock()
	items := []map[string]any{}
	for _, uid := range s.st.identOrder {
		id := s.st.identities[uid]
		if hasName && name[0] != "" && id.Name != name[0] {
			continue
		}
		if !matchAny(id.Offering, offerings) {
			continue
		}
		items = append(items, s.identityView(baseURL(r), id))
	}
	writeList(w, r, items)
	return nil
}

// parseIdentity validates the body the agent sends on create and update.
func (s *Server) parseIdentity(body map[string]any, into *Identity) *apiError {
	fe := fieldErrors{}
	off, okOff := uuidField(body, fe, "offering", true)
	name, okName := strField(body, fe, "name", true, false)
	version, _ := strField(body, fe, "version", false, true)
	lastRestarted, _ := strField(body, fe, "last_restarted", false, true)
	cfgPath, _ := strField(body, fe, "config_file_path", false, true)
	cfgContent, _ := strField(body, fe, "config_file_content", false, true)
	deps, _ := listField(body, fe, "dependencies", false)
	if okOff && s.st.offerings[off] == nil {
		fe.add("offering", "Object with uuid="+off+" does not exist.")
	}
	if err := fe.err(); err != nil {
		return err
	}
	if okName {
		into.Name = name
	}
	into.Offering, into.Version, into.LastRestarted = off, version, lastRestarted
	into.ConfigFilePath, into.ConfigFileContent = cfgPath, cfgContent
	into.Dependencies = nil
	for _, d := range deps {
		into.Dependencies = append(into.Dependencies, jsonPlain(d))
	}
	if into.Dependencies == nil {
		into.Dependencies = []any{}
	}
	return nil
}

func (s *Server) createIdentity(w http.ResponseWriter, r *http.Request, _ *User) error {
	body, aerr := decodeBody(r)
	if aerr != nil {
		return aerr
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	id := &Identity{UUID: newUUID(), Created: s.now(), Modified: s.now()}
	if err := s.parseIdentity(body, id); err != nil {
		return err
	}
	for _, other := range s.st.identities {
		if other.Name == id.Name {
			return &apiError{Status: http.StatusBadRequest, Body: map[string][]string{
				"name": {"Agent identity with this name already exists."}}}
		}
	}
	s.st.identities[id.UUID] = id
	s.st.identOrder = append(s.st.identOrder, id.UUID)
	simkit.WriteJSON(w, http.StatusCreated, s.identityView(baseURL(r), id))
	return nil
}

func (s *Server) updateIdentity(w http.ResponseWriter, r *http.Request, _ *User, uid string, body map[string]any) error {
	id := s.st.identities[uid]
	if id == nil {
		return errNotFound
	}
	if r.Method == http.MethodPatch { // partial: keep what is not sent
		cur := toMap(*id)
		for k, v := range body {
			cur[k] = v
		}
		body = cur
	}
	upd := *id
	if err := s.parseIdentity(body, &upd); err != nil {
		return err
	}
	upd.Modified = s.now()
	*id = upd
	simkit.WriteJSON(w, http.StatusOK, s.identityView(baseURL(r), id))
	return nil
}

func (s *Server) registerService(w http.ResponseWriter, r *http.Request, _ *User, uid string, body map[string]any) error {
	fe := fieldErrors{}
	name, _ := strField(body, fe, "name", true, false)
	mode, _ := strField(body, fe, "mode", true, false)
	if s.st.identities[uid] == nil {
		return errNotFound
	}
	if err := fe.err(); err != nil {
		return err
	}
	base := baseURL(r)
	for _, svc := range s.st.services {
		if svc.Identity == uid && svc.Name == name {
			svc.Mode, svc.State, svc.Modified = mode, "Active", s.now()
			v := *svc
			v.URL = base + "/api/marketplace-site-agent-services/" + svc.UUID + "/"
			simkit.WriteJSON(w, http.StatusOK, v)
			return nil
		}
	}
	svc := &AgentService{UUID: newUUID(), Identity: uid, Name: name, Mode: mode, State: "Active",
		Statistics: map[string]any{}, Processors: []AgentProcessor{}, Created: s.now(), Modified: s.now()}
	s.st.services[svc.UUID] = svc
	v := *svc
	v.URL = base + "/api/marketplace-site-agent-services/" + svc.UUID + "/"
	simkit.WriteJSON(w, http.StatusCreated, v)
	return nil
}

func (s *Server) registerProcessor(w http.ResponseWriter, r *http.Request, _ *User, uid string, body map[string]any) error {
	fe := fieldErrors{}
	name, _ := strField(body, fe, "name", true, false)
	btype, _ := strField(body, fe, "backend_type", true, false)
	bversion, _ := strField(body, fe, "backend_version", false, true)
	svc := s.st.services[uid]
	if svc == nil {
		return errNotFound
	}
	if err := fe.err(); err != nil {
		return err
	}
	for i := range svc.Processors {
		if p := &svc.Processors[i]; p.Name == name {
			p.BackendType, p.BackendVersion, p.Modified = btype, bversion, s.now()
			simkit.WriteJSON(w, http.StatusOK, *p)
			return nil
		}
	}
	p := AgentProcessor{UUID: newUUID(), Service: uid, Name: name, BackendType: btype,
		BackendVersion: bversion, Created: s.now(), Modified: s.now()}
	svc.Processors = append(svc.Processors, p)
	simkit.WriteJSON(w, http.StatusCreated, p)
	return nil
}

// registerEventSubscription creates an EventSubscription for the caller and,
// like Mastermind's signal handlers, the RabbitMQ vhost (user uuid hex) and
// a RabbitMQ user named after the subscription with the token as password.
func (s *Server) registerEventSubscription(w http.ResponseWriter, r *http.Request, u *User) error {
	uid, err := pathUUID(r)
	if err != nil {
		return err
	}
	body, aerr := decodeBody(r)
	if aerr != nil {
		return aerr
	}
	fe := fieldErrors{}
	objType, okType := strField(body, fe, "observable_object_type", true, false)
	desc, _ := strField(body, fe, "description", false, true)
	if okType && !slices.Contains(objectTypes, objType) {
		fe.add("observable_object_type", `"`+objType+`" is not a valid choice.`)
	}
	s.mu.Lock()
	found := s.st.identities[uid] != nil
	s.mu.Unlock()
	if !found {
		return errNotFound
	}
	if err := fe.err(); err != nil {
		return err
	}
	sub := &EventSubscription{
		UUID: newUUID(), UserUUID: u.UUID, UserUsername: u.Username, UserFullName: u.FullName,
		Description: desc, ObservableObjects: []map[string]any{{"object_type": objType}},
		Created: s.now(), Modified: s.now(),
	}
	if err := s.brokerSetupSubscription(context.WithoutCancel(r.Context()), sub, u); err != nil {
		s.log.Error("rabbitmq setup for event subscription failed", "subscription", sub.UUID, "err", err)
		return detail(http.StatusInternalServerError, "RabbitMQ error: "+err.Error())
	}
	s.mu.Lock()
	s.st.subs[sub.UUID] = sub
	s.st.subOrder = append(s.st.subOrder, sub.UUID)
	v := subView(baseURL(r), sub)
	s.mu.Unlock()
	simkit.WriteJSON(w, http.StatusCreated, v)
	return nil
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

// ownSub finds a subscription visible to u (others' are 404, as the
// queryset is filtered by user).
func (s *Server) ownSub(r *http.Request, u *User) (*EventSubscription, error) {
	id, err := pathUUID(r)
	if err != nil {
		return nil, err
	}
	sub := s.st.subs[id]
	if sub == nil || sub.UserUUID != u.UUID {
		return nil, errNotFound
	}
	return sub, nil
}

func (s *Server) listSubscriptions(w http.ResponseWriter, r *http.Request, u *User) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	items := []map[string]any{}
	for _, id := range s.st.subOrder {
		if sub := s.st.subs[id]; sub.UserUUID == u.UUID {
			items = append(items, toMap(subView(baseURL(r), sub)))
		}
	}
	writeList(w, r, items)
	return nil
}

func (s *Server) getSubscription(w http.ResponseWriter, r *http.Request, u *User) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	sub, err := s.ownSub(r, u)
	if err != nil {
		return err
	}
	simkit.WriteJSON(w, http.StatusOK, restrictFields(r, toMap(subView(baseURL(r), sub))))
	return nil
}

func (s *Server) deleteSubscription(w http.ResponseWriter, r *http.Request, u *User) error {
	s.mu.Lock()
	sub, err := s.ownSub(r, u)
	if err != nil {
		s.mu.Unlock()
		return err
	}
	var queues []*SubscriptionQueue
	kept := s.st.queues[:0]
	for _, q := range s.st.queues {
		if q.EventSubscriptionUUID == sub.UUID {
			queues = append(queues, q)
		} else {
			kept = append(kept, q)
		}
	}
	s.st.queues = kept
	delete(s.st.subs, sub.UUID)
	s.st.subOrder = slices.DeleteFunc(s.st.subOrder, func(id string) bool { return id == sub.UUID })
	s.mu.Unlock()
	s.brokerTeardownSubscription(context.WithoutCancel(r.Context()), sub, queues)
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// createQueue declares subscription_<sub>_offering_<off>_<type> in the
// user's vhost: 201 when new, 200 with the existing object otherwise.
func (s *Server) createQueue(w http.ResponseWriter, r *http.Request, u *User) error {
	body, aerr := decodeBody(r)
	if aerr != nil {
		return aerr
	}
	fe := fieldErrors{}
	off, okOff := uuidField(body, fe, "offering_uuid", true)
	objType, okType := strField(body, fe, "object_type", true, false)
	if okType && !slices.Contains(objectTypes, objType) {
		fe.add("object_type", `"`+objType+`" is not a valid choice.`)
	}
	s.mu.Lock()
	sub, err := s.ownSub(r, u)
	if err != nil {
		s.mu.Unlock()
		return err
	}
	if okOff && s.st.offerings[off] == nil {
		fe.add("offering_uuid", "Offering not found.")
	}
	if err := fe.err(); err != nil {
		s.mu.Unlock()
		return err
	}
	for _, q := range s.st.queues {
		if q.EventSubscriptionUUID == sub.UUID && q.OfferingUUID == off && q.ObjectType == objType {
			v := queueView(baseURL(r), q)
			s.mu.Unlock()
			simkit.WriteJSON(w, http.StatusOK, v)
			return nil
		}
	}
	s.mu.Unlock()
	q := &SubscriptionQueue{
		UUID: newUUID(), EventSubscriptionUUID: sub.UUID, OfferingUUID: off, ObjectType: objType,
		QueueName: QueueName(sub.UUID, off, objType), Vhost: sub.UserUUID, Created: s.now(),
	}
	if err := s.brokerDeclareQueue(context.WithoutCancel(r.Context()), q); err != nil {
		s.log.Error("declare queue failed", "queue", q.QueueName, "err", err)
		return detail(http.StatusInternalServerError, "RabbitMQ error: "+err.Error())
	}
	s.mu.Lock()
	s.st.queues = append(s.st.queues, q)
	v := queueView(baseURL(r), q)
	s.mu.Unlock()
	simkit.WriteJSON(w, http.StatusCreated, v)
	return nil
}

// QueueName is Mastermind's (and the agent's) per-subscription queue name.
func QueueName(subUUID, offeringUUID, objectType string) string {
	return "subscription_" + subUUID + "_offering_" + offeringUUID + "_" + objectType
}

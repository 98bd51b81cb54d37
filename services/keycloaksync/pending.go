package keycloaksync

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sitebus/sitebus/pkg/bus"
	sitebusv1 "github.com/sitebus/sitebus/pkg/gen/sitebus/v1"
	"github.com/sitebus/sitebus/pkg/keycloak"
)

// PendingBucket holds memberships whose user is not in Keycloak yet, under
// <offering>.<group id>.<user ref>, so they survive restarts and any
// replica's periodic job can complete them.
const PendingBucket = "sitebus_keycloak_pending"

// pendingEntry is one pending membership.
type pendingEntry struct {
	Offering  string    `json:"offering"`
	GroupID   string    `json:"group_id"`
	GroupName string    `json:"group_name"`
	Ref       string    `json:"ref"`
	ByID      bool      `json:"by_id"`
	Since     time.Time `json:"since"`
}

func (s *Service) ensurePendingBucket(ctx context.Context) (jetstream.KeyValue, error) {
	kv, err := bus.EnsureKeyValue(ctx, s.bus.JetStream(), jetstream.KeyValueConfig{
		Bucket:      PendingBucket,
		Description: "Keycloak memberships waiting for their user to appear",
		History:     1,
		Storage:     jetstream.FileStorage,
		Replicas:    s.bus.Replicas(),
	})
	if err != nil {
		return nil, fmt.Errorf("keycloak-sync: ensure bucket %s: %w", PendingBucket, err)
	}
	return kv, nil
}

func (s *Service) kv() jetstream.KeyValue {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pending
}

// token makes any string a key token: base64url has no dots or wildcards.
func token(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

// offeringHex is an offering UUID as keys and group attributes carry it:
// 32 lower-case hex digits, however it was spelt.
func offeringHex(uuid string) string { return strings.ToLower(strings.ReplaceAll(uuid, "-", "")) }

func groupPrefix(offering, groupID string) string {
	return offeringHex(offering) + "." + token(groupID)
}

func pendingKey(offering, groupID, ref string) string {
	return groupPrefix(offering, groupID) + "." + token(ref)
}

func (s *Service) putPending(ctx context.Context, offering string, g keycloak.Group, ref *sitebusv1.UserRef) error {
	key := pendingKey(offering, g.ID, ref.GetRef())
	if e, err := s.kv().Get(ctx, key); err == nil {
		var old pendingEntry
		if json.Unmarshal(e.Value(), &old) == nil && old.ByID == ref.GetById() {
			return nil // pending already; keep its Since
		}
	}
	data, _ := json.Marshal(pendingEntry{
		Offering: offeringHex(offering), GroupID: g.ID, GroupName: g.Name, Ref: ref.GetRef(), ByID: ref.GetById(), Since: time.Now().UTC(),
	})
	if _, err := s.kv().Put(ctx, key, data); err != nil {
		return fmt.Errorf("keycloak-sync: store pending membership: %w", err)
	}
	s.log.Info("membership pending: user not in Keycloak yet", "group", g.Name, "user", ref.GetRef())
	s.countPending(ctx)
	return nil
}

func (s *Service) dropPending(ctx context.Context, offering, groupID, ref string) error {
	err := s.kv().Delete(ctx, pendingKey(offering, groupID, ref))
	if err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		return fmt.Errorf("keycloak-sync: drop pending membership: %w", err)
	}
	s.countPending(ctx)
	return nil
}

func (s *Service) hasPending(ctx context.Context, offering, groupID, ref string) (bool, error) {
	_, err := s.kv().Get(ctx, pendingKey(offering, groupID, ref))
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, jetstream.ErrKeyNotFound), errors.Is(err, jetstream.ErrKeyDeleted):
		return false, nil
	}
	return false, err
}

// pendingOf lists a group's pending memberships.
func (s *Service) pendingOf(ctx context.Context, offering, groupID string) ([]pendingEntry, error) {
	keys, err := s.keys(ctx, groupPrefix(offering, groupID)+".*")
	if err != nil {
		return nil, err
	}
	var out []pendingEntry
	for _, k := range keys {
		if e, ok := s.entry(ctx, k); ok {
			out = append(out, e)
		}
	}
	return out, nil
}

// setPending makes refs the group's pending memberships: desired state,
// so a user no longer wanted stops being added when they appear.
func (s *Service) setPending(ctx context.Context, offering string, g keycloak.Group, refs []*sitebusv1.UserRef) error {
	want := map[string]bool{}
	for _, ref := range refs {
		want[pendingKey(offering, g.ID, ref.GetRef())] = true
		if err := s.putPending(ctx, offering, g, ref); err != nil {
			return err
		}
	}
	keys, err := s.keys(ctx, groupPrefix(offering, g.ID)+".*")
	if err != nil {
		return err
	}
	for _, k := range keys {
		if !want[k] {
			if err := s.kv().Delete(ctx, k); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
				return err
			}
		}
	}
	s.countPending(ctx)
	return nil
}

// forgetGroup drops the pending memberships of a deleted group.
func (s *Service) forgetGroup(ctx context.Context, offering, groupID string) error {
	return s.setPending(ctx, offering, keycloak.Group{ID: groupID}, nil)
}

func (s *Service) keys(ctx context.Context, filter string) ([]string, error) {
	// Bounded: listing starts with a JetStream request that gets no answer
	// if its server dies meanwhile, and a handler's ctx lasts minutes. A
	// listing cut short is an error, so the caller retries it.
	lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	l, err := s.kv().ListKeysFiltered(lctx, filter)
	if err != nil {
		return nil, fmt.Errorf("keycloak-sync: list pending memberships: %w", err)
	}
	var out []string
	for k := range l.Keys() {
		out = append(out, k)
	}
	if err := lctx.Err(); err != nil {
		return nil, fmt.Errorf("keycloak-sync: list pending memberships: %w", err)
	}
	return out, nil
}

func (s *Service) entry(ctx context.Context, key string) (pendingEntry, bool) {
	var e pendingEntry
	kve, err := s.kv().Get(ctx, key)
	if err != nil || json.Unmarshal(kve.Value(), &e) != nil {
		return e, false
	}
	return e, true
}

func (s *Service) countPending(ctx context.Context) {
	if keys, err := s.keys(ctx, ">"); err == nil {
		s.metrics.pending.Set(float64(len(keys)))
	}
}

// retryPending adds each pending member whose user now exists. Failures
// (Keycloak down) leave the entry for the next period.
func (s *Service) retryPending(ctx context.Context) {
	keys, err := s.keys(ctx, ">")
	if err != nil {
		s.log.Warn("cannot list pending memberships; next try at the next period", "err", err)
		return
	}
	for _, key := range keys {
		if ctx.Err() != nil {
			return
		}
		kve, err := s.kv().Get(ctx, key)
		if err != nil {
			continue
		}
		var e pendingEntry
		if err := json.Unmarshal(kve.Value(), &e); err != nil {
			continue
		}
		log := s.log.With("group", e.GroupName, "user", e.Ref)
		r := s.byOffering[e.Offering]
		if r == nil {
			log.Warn("pending membership of an offering without Keycloak here; kept", "offering", e.Offering)
			continue
		}
		u, err := r.client.FindUser(ctx, e.Ref, e.ByID)
		if err != nil {
			log.Warn("pending membership: user lookup failed; next try at the next period", "err", err)
			continue
		}
		if u == nil {
			continue
		}
		err = r.client.AddMember(ctx, e.GroupID, u.ID)
		if err != nil && !errors.Is(err, keycloak.ErrNotFound) {
			log.Warn("pending membership: adding failed; next try at the next period", "err", err)
			continue
		}
		if err != nil {
			log.Info("pending membership dropped: its group is gone")
		} else {
			log.Info("pending membership completed", "user_id", u.ID)
		}
		// Only this revision: a newer write (wanted again, by id now) stays.
		if err := s.kv().Delete(ctx, key, jetstream.LastRevision(kve.Revision())); err != nil {
			log.Debug("pending entry changed meanwhile; kept", "err", err)
		}
	}
	s.countPending(ctx)
}

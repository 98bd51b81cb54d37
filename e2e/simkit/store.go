package simkit

import (
	"slices"
	"sync"
)

// Store is a simulator's objects of one type keyed by id, as the simulated
// service keeps them: created with a generated id, read, changed and
// deleted by id, and listed in creation order (map order is random, and
// lists must be stable). Its own mutex makes each call safe; a simulator
// that changes several stores together holds its own lock around them.
// Objects are kept by pointer, so a caller changes one in place under its
// lock. The zero Store is empty and ready to use.
type Store[T any] struct {
	mu    sync.Mutex
	order []string
	byID  map[string]*T
}

// Put stores v under id unless id is taken; it reports whether it did.
func (s *Store[T]) Put(id string, v *T) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byID[id] != nil {
		return false
	}
	if s.byID == nil {
		s.byID = map[string]*T{}
	}
	s.byID[id] = v
	s.order = append(s.order, id)
	return true
}

// Create stores v under the first id newID draws that is not taken (ids
// are random, e.g. "p-" and five letters) and returns that id.
func (s *Store[T]) Create(newID func() string, v *T) string {
	for {
		if id := newID(); s.Put(id, v) {
			return id
		}
	}
}

// Get is the object with id; nil when there is none.
func (s *Store[T]) Get(id string) *T {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.byID[id]
}

// Delete removes the object with id and returns it; nil when there was
// none.
func (s *Store[T]) Delete(id string) *T {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := s.byID[id]
	if v != nil {
		delete(s.byID, id)
		s.order = slices.DeleteFunc(s.order, func(k string) bool { return k == id })
	}
	return v
}

// DeleteFunc removes every object del accepts (e.g. those a deleted owner
// had) and returns how many it removed.
func (s *Store[T]) DeleteFunc(del func(*T) bool) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.order)
	s.order = slices.DeleteFunc(s.order, func(id string) bool {
		if del(s.byID[id]) {
			delete(s.byID, id)
			return true
		}
		return false
	})
	return n - len(s.order)
}

// List is the objects keep accepts (nil keeps all), in creation order.
// keep runs under the store's lock and must not call the store.
func (s *Store[T]) List(keep func(*T) bool) []*T {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*T, 0, len(s.order))
	for _, id := range s.order {
		if v := s.byID[id]; keep == nil || keep(v) {
			out = append(out, v)
		}
	}
	return out
}

// ListByID is List ordered by id instead, as services that sort their
// collections by id answer them.
func (s *Store[T]) ListByID(keep func(*T) bool) []*T {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*T, 0, len(s.order))
	for _, id := range slices.Sorted(slices.Values(s.order)) {
		if v := s.byID[id]; keep == nil || keep(v) {
			out = append(out, v)
		}
	}
	return out
}

// Find is the first object, in creation order, that match accepts; nil
// when none does.
func (s *Store[T]) Find(match func(*T) bool) *T {
	if found := s.List(match); len(found) > 0 {
		return found[0]
	}
	return nil
}

// Count is how many objects keep accepts (nil: all).
func (s *Store[T]) Count(keep func(*T) bool) int { return len(s.List(keep)) }

// Copies is ListByID with each object copied out, for a caller that must
// not share them (e.g. a test reading state the simulator goes on
// changing); nil when there is none.
func (s *Store[T]) Copies(keep func(*T) bool) []T {
	var out []T
	for _, v := range s.ListByID(keep) {
		out = append(out, *v)
	}
	return out
}

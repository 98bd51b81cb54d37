package testenv

import (
	"fmt"
	"os"
	"sync"
	"testing"
)

// Runner runs a test binary's tests: *testing.M, or another shared
// instance's wrapper, so shared instances compose.
type Runner interface{ Run() int }

// RunnerFunc makes a function a Runner.
type RunnerFunc func() int

// Run calls f.
func (f RunnerFunc) Run() int { return f() }

// Shared is one instance of a costly dependency (a broker, a cluster) per
// test binary: started by the first test that asks for it, stopped after
// all the binary's tests have run. Start and Stop are set by the package
// that owns the dependency; the names say what it is in messages.
type Shared[T any] struct {
	Pkg, Noun string // "rabbitmq", "broker": says what stopping failed
	What      string // "RabbitMQ": says what starting failed
	Start     func() (T, error)
	Stop      func(T) error
	// Started, when set, is told of a start that succeeded (e.g. to log its
	// timings).
	Started func(t testing.TB, v T)

	mu     sync.Mutex
	active bool
	tried  bool
	v      T
	err    error
}

// Run runs m's tests and stops the shared instance, if a test started one.
func (s *Shared[T]) Run(m Runner) int {
	s.mu.Lock()
	s.active = true
	s.mu.Unlock()
	code := m.Run()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tried && s.err == nil {
		if err := s.Stop(s.v); err != nil {
			fmt.Fprintf(os.Stderr, "%s: stop shared %s: %v\n", s.Pkg, s.Noun, err)
		}
		var zero T
		s.v, s.tried = zero, false
	}
	return code
}

// Get returns the instance, starting it on first use; it fails t when the
// start failed (then and for every later test) or when Run is not running
// the binary's tests, which would leak the instance's processes.
func (s *Shared[T]) Get(t testing.TB) T {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.active {
		t.Fatalf("%[1]s.Shared needs %[1]s.RunShared in TestMain (it stops the %[2]s)", s.Pkg, s.Noun)
	}
	if !s.tried {
		s.tried = true
		s.v, s.err = s.Start()
		if s.err == nil && s.Started != nil {
			s.Started(t, s.v)
		}
	}
	if s.err != nil {
		t.Fatalf("start shared %s: %v", s.What, s.err)
	}
	return s.v
}

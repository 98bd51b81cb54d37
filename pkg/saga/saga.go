package saga

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/sitebus/sitebus/pkg/bus"
)

// Definition is a saga type: a name and the ordered steps every instance
// runs. The name is part of subjects (saga.parked.<name>), so it is letters,
// digits, '-' or '_'.
type Definition struct {
	Name  string
	Steps []Step
}

// Step is one forward action and the compensation that undoes it.
type Step struct {
	// Name identifies the step within its definition; it keys the step's
	// output in [ActivityInput.Outputs].
	Name string
	// Action is the registered activity that performs the step.
	Action string
	// Compensation is the registered activity that undoes a completed
	// Action. Empty: the step has nothing to undo.
	Compensation string
	// Timeout bounds each attempt of the action and of the compensation; a
	// timed-out attempt is a failed, retryable attempt. Default 1m.
	Timeout time.Duration
	// MaxAttempts is how many attempts of the action may fail before the
	// step fails and the saga compensates. Default 3.
	MaxAttempts int
	// CompensationMaxAttempts is how many attempts of the compensation may
	// fail before the saga is parked. Default 10.
	CompensationMaxAttempts int
	// Backoff gives the delay before attempt n+1 after attempt n failed.
	// Default exponential 1s..1m with jitter.
	Backoff bus.Backoff
}

func (s *Step) setDefaults() {
	if s.Timeout == 0 {
		s.Timeout = time.Minute
	}
	if s.MaxAttempts == 0 {
		s.MaxAttempts = 3
	}
	if s.CompensationMaxAttempts == 0 {
		s.CompensationMaxAttempts = 10
	}
	if s.Backoff == nil {
		s.Backoff = bus.ExponentialBackoff(time.Second, time.Minute)
	}
}

// Validate reports the first problems that make the definition unusable.
func (d Definition) Validate() error {
	var errs []error
	if !bus.ValidToken(d.Name) {
		errs = append(errs, fmt.Errorf("saga: definition name %q must be letters, digits, '-' or '_'", d.Name))
	}
	if len(d.Steps) == 0 {
		errs = append(errs, fmt.Errorf("saga: definition %s has no steps", d.Name))
	}
	seen := map[string]bool{}
	for i, s := range d.Steps {
		switch {
		case s.Name == "":
			errs = append(errs, fmt.Errorf("saga: definition %s: step %d has no name", d.Name, i))
		case seen[s.Name]:
			errs = append(errs, fmt.Errorf("saga: definition %s: step name %q used twice", d.Name, s.Name))
		}
		seen[s.Name] = true
		if s.Action == "" {
			errs = append(errs, fmt.Errorf("saga: definition %s: step %s has no action", d.Name, s.Name))
		}
		if s.Timeout < 0 || s.MaxAttempts < 0 || s.CompensationMaxAttempts < 0 {
			errs = append(errs, fmt.Errorf("saga: definition %s: step %s has a negative timeout or attempt count", d.Name, s.Name))
		}
	}
	return errors.Join(errs...)
}

// Status is the state of a saga.
type Status string

// Saga statuses. Succeeded, Compensated, Failed and Parked are terminal for
// [Coordinator.Wait]; only Retry moves a saga out of Parked.
const (
	StatusRunning      Status = "running"
	StatusCompensating Status = "compensating"
	StatusSucceeded    Status = "succeeded"
	StatusCompensated  Status = "compensated"
	StatusFailed       Status = "failed"
	StatusParked       Status = "parked"
)

// Terminal reports whether no coordinator will advance a saga in status s
// without an operator.
func (s Status) Terminal() bool {
	switch s {
	case StatusSucceeded, StatusCompensated, StatusFailed, StatusParked:
		return true
	}
	return false
}

// StepStatus is the state of one step.
type StepStatus string

// Step statuses. A step goes pending → running → done (or failed); when the
// saga compensates, a done step goes compensating → compensated, and steps
// that never ran become skipped.
const (
	StepPending      StepStatus = "pending"
	StepRunning      StepStatus = "running"
	StepDone         StepStatus = "done"
	StepFailed       StepStatus = "failed"
	StepCompensating StepStatus = "compensating"
	StepCompensated  StepStatus = "compensated"
	StepSkipped      StepStatus = "skipped"
)

// StepState is the recorded progress of one step.
type StepState struct {
	Name   string     `json:"name"`
	Status StepStatus `json:"status"`
	// Attempts of the action started so far.
	Attempts int `json:"attempts"`
	// CompensationAttempts of the compensation started so far.
	CompensationAttempts int `json:"compensation_attempts,omitempty"`
	// InFlight: an attempt was started and has no recorded verdict yet. A
	// coordinator that finds it set on resume re-runs that attempt.
	InFlight bool `json:"in_flight,omitempty"`
	// Interrupted counts attempts re-run because their coordinator died.
	Interrupted int `json:"interrupted,omitempty"`
	// RetryAt is when the next attempt may start after a failed one.
	RetryAt time.Time `json:"retry_at,omitzero"`
	// Output of the action, passed to later steps and to compensations.
	Output json.RawMessage `json:"output,omitempty"`
	// Error of the latest failed action attempt.
	Error string `json:"error,omitempty"`
	// CompensationError of the latest failed compensation attempt.
	CompensationError string    `json:"compensation_error,omitempty"`
	UpdatedAt         time.Time `json:"updated_at,omitzero"`
}

// Saga is one run of a definition, as stored in the bucket.
type Saga struct {
	ID         string          `json:"id"`
	Definition string          `json:"definition"`
	Input      json.RawMessage `json:"input,omitempty"`
	Steps      []StepState     `json:"steps"`
	Status     Status          `json:"status"`
	// Error is why the saga compensated or failed: the failed step and its
	// last error.
	Error string `json:"error,omitempty"`
	// ParkReason is why the saga is parked; ParkedIn is the status Retry
	// resumes it in; Parks counts how often it was parked.
	ParkReason string `json:"park_reason,omitempty"`
	ParkedIn   Status `json:"parked_in,omitempty"`
	Parks      int    `json:"parks,omitempty"`
	// TraceParent is the W3C trace context of the Start call, so every span
	// of the saga, resumed or not, belongs to the order's trace.
	TraceParent string `json:"traceparent,omitempty"`
	TraceState  string `json:"tracestate,omitempty"`
	// Owner is the coordinator driving the saga until LeaseUntil.
	Owner      string    `json:"owner,omitempty"`
	LeaseUntil time.Time `json:"lease_until,omitzero"`
	Created    time.Time `json:"created"`
	Updated    time.Time `json:"updated"`
	// Revision is the bucket revision this copy was read at.
	Revision uint64 `json:"-"`
}

// Step returns the state of the named step.
func (s *Saga) Step(name string) (StepState, bool) {
	for _, st := range s.Steps {
		if st.Name == name {
			return st, true
		}
	}
	return StepState{}, false
}

// Activity performs an action or a compensation. It must be idempotent: after
// a crash it is called again for an attempt that may already have taken
// effect. It should honour ctx, which carries the step's timeout. An error
// marked [bus.Terminal] is not retried.
type Activity func(ctx context.Context, in ActivityInput) (json.RawMessage, error)

// ActivityInput is what an activity is called with.
type ActivityInput struct {
	SagaID     string
	Definition string
	Step       string
	// Compensating is set when the call is a compensation.
	Compensating bool
	// Attempt is the attempt number, from 1.
	Attempt int
	// Input is the saga's input as given to Start.
	Input json.RawMessage
	// Outputs holds the output of every step whose action completed, by step
	// name. A compensation finds its own action's output here, e.g. which
	// groups the action created, so that it deletes only those.
	Outputs map[string]json.RawMessage
	// SagaError is why the saga is compensating.
	SagaError string
}

// DecodeInput unmarshals the saga's input into v.
func (in ActivityInput) DecodeInput(v any) error {
	if err := json.Unmarshal(in.Input, v); err != nil {
		return bus.Terminal(fmt.Errorf("saga %s: decode input: %w", in.SagaID, err))
	}
	return nil
}

// DecodeOutput unmarshals step's output into v; it reports false when the
// step has no output.
func (in ActivityInput) DecodeOutput(step string, v any) (bool, error) {
	raw, ok := in.Outputs[step]
	if !ok || len(raw) == 0 {
		return false, nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return true, bus.Terminal(fmt.Errorf("saga %s: decode output of %s: %w", in.SagaID, step, err))
	}
	return true, nil
}

// Errors returned by the coordinator.
var (
	ErrNotFound          = errors.New("saga: not found")
	ErrUnknownDefinition = errors.New("saga: unknown definition")
	ErrNotParked         = errors.New("saga: not parked")
	ErrConflict          = errors.New("saga: exists with another definition")
)

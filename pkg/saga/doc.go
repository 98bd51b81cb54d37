// Package saga runs sagas: ordered steps across services, each with a
// compensation, whose state lives in a JetStream key-value bucket so that a
// coordinator killed at any point resumes where it stopped.
//
// # Model
//
// A [Definition] is data: a name and an ordered list of [Step]s, each naming
// an action and (optionally) a compensation by the name of an [Activity]
// registered on the [Coordinator]. A [Saga] is one run of a definition; it is
// stored as JSON under its ID in the bucket (default "sitebus_sagas").
//
// The semantics are Temporal's saga sample (temporalio/samples-go saga/):
//
//   - Steps run forward in order. Each attempt runs with the step's Timeout.
//     An error marked [bus.Terminal] fails the step at once; any other error
//     (a timeout included) is retried with the step's Backoff until
//     MaxAttempts attempts have failed.
//   - When a step has finally failed, the steps that completed are
//     compensated last-in first-out. The failed step itself is not
//     compensated: an action must leave nothing behind when it returns an
//     error, or its compensation must be placed on an earlier step.
//   - A compensation is retried with backoff up to CompensationMaxAttempts.
//     If it still fails the saga is parked: it keeps its state, is published
//     on saga.parked.<definition>, shows in the sitebus_sagas_parked gauge and
//     waits for [Coordinator.Retry] (sitebus sagas retry). A saga is never
//     dropped.
//
// Outcomes: succeeded (every step done), compensated (a step failed and
// every completed step was undone; Error keeps the failure), failed (a step
// failed before anything needed undoing), parked (a compensation keeps
// failing, or the stored saga does not match its registered definition).
// Each outcome is also published on saga.<outcome>.<definition> in the
// SITEBUS_SAGAS stream, with the saga as JSON, so a service can react to it
// durably.
//
// # Durability and crashes
//
// Every transition is written to the bucket with a compare-and-set on the
// entry's revision before the next side effect starts: "attempt n of step s
// is starting" is stored before the activity is called, and its verdict is
// stored before the next activity is called. A coordinator killed at any
// moment therefore leaves a record that says exactly what may have happened;
// the coordinator that picks the saga up re-runs the step (or compensation)
// that was in flight. Activities must therefore be idempotent: create if
// absent, delete if present, keyed by the saga ID and the outputs of earlier
// steps. An interrupted attempt is re-run under the same attempt number; an
// attempt interrupted more than three times counts as a failed attempt, so
// an activity that crashes the process cannot loop forever.
//
// # Ownership
//
// A saga is driven by one coordinator at a time. The driving coordinator
// holds a lease (Owner and LeaseUntil in the record), renews it while the
// saga runs, and gives it up on a graceful shutdown. Another coordinator
// takes a saga over only when the lease is free or has expired, and every
// write is a compare-and-set, so two coordinators can never both advance the
// same saga: the loser of a race sees a revision mismatch and stops. A
// coordinator that cannot renew its lease in time cancels its in-flight
// activity before the lease can expire. Leases compare wall clocks, so the
// hosts' clocks must agree to well within LeaseTTL.
package saga

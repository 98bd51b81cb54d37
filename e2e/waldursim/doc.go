// Package waldursim is a stateful, in-memory stand-in for Waldur Mastermind
// as the site agent sees it: the REST endpoints it calls (same paths,
// trailing slashes, bodies, status codes, pagination) and the STOMP events
// Mastermind publishes to RabbitMQ for event subscriptions.
//
// It is seeded from a YAML fixture and driven by tests (and demos) through a
// small admin API under /sim/ (see AdminClient). It rejects what real Waldur
// rejects: bad tokens, unknown objects, invalid bodies and invalid state
// transitions.
package waldursim

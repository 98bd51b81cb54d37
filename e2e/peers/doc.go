// Package peers holds the tests of sitebus's clients facing peers that
// misbehave: the Waldur, Keycloak, Rancher, OKD and OpenStack simulators,
// and a real Vault behind a faulting proxy, answering through simkit's
// faults with invalid JSON, a wrong content type, a 200 with an error
// body, a huge body, a slow trickle or nothing at all. Each call must end
// within its time bound, read no more than its size cap, fail with an
// error of package fault's vocabulary that names the peer and not a
// secret, and leave no goroutine or connection behind.
package peers

// Package simhttp is the HTTP side the e2e simulators (waldursim,
// keycloaksim, ranchersim, okdsim) share: serving a handler on an address
// or an httptest server, a middleware that logs calls and injects faults
// (status, delay, dropped connection, service down), and the admin routes
// that reset the call log and set faults. Each simulator keeps
// its own wire formats; what differs between them (error bodies, whether
// request bodies are logged, how Close treats hanging requests) is an
// option here.
package simhttp

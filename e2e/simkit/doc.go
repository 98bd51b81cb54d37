// Package simkit is what the e2e simulators (waldursim, keycloaksim,
// ranchersim, okdsim, openstacksim) share: the server facade each embeds
// (Base: serving on an address or an httptest server, the call log, fault
// injection and the /sim/ admin routes for them), a middleware that logs
// calls and injects faults (status, delay, dropped connection, service
// down), JSON answers and one error type, and Main for their commands.
// Each simulator keeps its own wire formats; what differs between them
// (error bodies, whether request bodies are logged, how Close treats
// hanging requests) is an option here.
package simkit

// Package simkit is what the e2e simulators (waldursim, keycloaksim,
// ranchersim, okdsim, openstacksim) share. Each simulator keeps its own
// wire format (error bodies, pagination, status codes); what differs
// between them is an option here. Which piece to use for what:
//
//   - Serving: embed Base (base.go; serving in server.go) for Start, URL,
//     Close, NewTestServer, the call log and faults, and the /sim/ fault
//     and call-log routes (AdminRoutes, admin.go). Main (main.go) is the
//     whole of an e2e/cmd/*sim command.
//   - Faults and the call log: Faults (faults.go), applied by its
//     Middleware; FaultOptions hold each service's error bodies.
//   - Answers: WriteJSON and WriteError with Error, an error whose body is
//     already in the service's format (OAuthError for a token endpoint);
//     BaseURL for links, NewUUID for ids (respond.go).
//   - Handlers: Handle (handler.go) adapts a typed handler
//     func(r, In) (Out, error) once, with Handlers holding how the service
//     decodes requests, writes errors and renders bodies; a Reply sets
//     another status, headers or no body. BadBody is Handlers for a route
//     whose only error is a malformed body. Decode and DecodeIn read the
//     bodies of services that answer "Malformed request body" (OpenStack).
//   - Resources kept in a map by id and served with list filters, marker
//     paging and create/update/delete: Collection, ListFormat and CRUD
//     (crud.go), OpenStack-style.
//   - Page-number paging with Link headers (Django REST framework's, as in
//     Waldur): PageNumbers and PageOf (pages.go).
//   - Objects kept in creation order behind their own lock, by id: Store
//     (store.go). Plain maps and slices of objects: SortedBy, Select,
//     FindBy, Index and Map (lists.go).
//   - Tests that call a simulator over HTTP: TestCall (testclient.go).
package simkit

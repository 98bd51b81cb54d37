// Package keycloaksim is a stateful, in-memory stand-in for the parts of
// Keycloak's admin REST API that sitebus uses through gocloak v13: the
// password-grant token endpoint, realms, groups (top level and children),
// group membership and user lookups.
//
// It follows current Keycloak (≥ 23) semantics, because that is what sites
// run and what broke the Python agent: the top-level group list does not
// inline subGroups but reports subGroupCount, search returns matches inside
// their ancestry, /groups/{id}/children pages (10 by default), names are
// unique among siblings (409), and errors carry Keycloak's bodies. Tokens are
// short-lived and their expiry is enforced, so logging in again is exercised.
//
// Tests drive it with Go methods on Server: seed users and groups, add a
// user later, inspect members, read the call log, and inject faults
// (AddFault, Down) to make Keycloak fail or hang. For a simulator run as a
// process (cmd/keycloaksim), the call log and fault injection are served
// without a token under /sim/ (simkit's admin routes).
package keycloaksim

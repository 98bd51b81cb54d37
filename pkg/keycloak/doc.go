// Package keycloak is sitebus's Keycloak admin client, built on gocloak
// v13: groups (found by exact name among their siblings, in a way that works
// on Keycloak ≥ 23, which no longer inlines subGroups in the group list),
// group membership and user lookups.
//
// It owns the admin token (password grant, cached, renewed before expiry
// and once on a 401), retries what a retry can fix (5xx, 429, transport
// errors) with bounded backoff, and gives every error a kind of package
// fault (ErrNotFound is fault.NotFound, ...), so that fault.IsTerminal tells
// "try again later" from "this will never work". Groups it creates carry
// managed_by: ["sitebus"] and the attributes the caller gives
// (WithAttribute: the offering a group was made for, OfferingAttribute, so
// that deployments sharing a realm tell their groups apart); it deletes
// only groups marked by sitebus or by the Python waldur-site-agent, so a
// site can switch from one to the other. Package keycloakfake is an
// in-memory realm answering as this client does, for unit tests.
//
// Passwords and tokens are never logged or put into errors.
package keycloak

//go:build tools

// Package vaultbin only records the Vault server command as a dependency so
// that go.sum covers everything `go build` needs. The end-to-end tests run a
// real Vault dev server built from it by .ci/vault.sh; being its own module
// (not in go.work) keeps Vault's ~1,000 modules out of sitebus's go.sum.
package vaultbin

import _ "github.com/hashicorp/vault"

package vault

import (
	"fmt"
	"strings"
)

// KVMount is where the registration tokens are kept: a KV v2 engine, as a
// dev server mounts it and as Mastermind's paths assume.
const KVMount = "secret"

// Cluster names a cluster's Vault objects. Build it with ParseCluster.
type Cluster struct {
	hex string // 32 lower-case hex digits
}

// ParseCluster accepts a cluster UUID with or without dashes, in any case.
func ParseCluster(uuid string) (Cluster, error) {
	h := strings.ToLower(strings.ReplaceAll(uuid, "-", ""))
	if len(h) != 32 || strings.Trim(h, "0123456789abcdef") != "" {
		return Cluster{}, fmt.Errorf("vault: %q is not a cluster UUID", uuid)
	}
	if strings.Contains(uuid, "-") && canonical(h) != strings.ToLower(uuid) {
		return Cluster{}, fmt.Errorf("vault: %q is not a cluster UUID (dashes misplaced)", uuid)
	}
	return Cluster{hex: h}, nil
}

func canonical(h string) string {
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// UUID is the dashed form, as Python's str(uuid) gives it.
func (c Cluster) UUID() string { return canonical(c.hex) }

// Hex is the undashed form, as Python's uuid.hex gives it.
func (c Cluster) Hex() string { return c.hex }

// PolicyName is rancher-provisioning-policy-<hex>.
func (c Cluster) PolicyName() string { return "rancher-provisioning-policy-" + c.hex }

// RoleName is rancher-provisioning-role-<hex>.
func (c Cluster) RoleName() string { return "rancher-provisioning-role-" + c.hex }

// SecretPath is the KV v2 secret's path below KVMount:
// rancher/cluster-<uuid>.
func (c Cluster) SecretPath() string { return "rancher/cluster-" + c.UUID() }

// CLISecretPath is the path a node gives `vault kv get`:
// secret/rancher/cluster-<uuid>.
func (c Cluster) CLISecretPath() string { return KVMount + "/" + c.SecretPath() }

// dataPath is the API path the policy grants read on.
func (c Cluster) dataPath() string { return KVMount + "/data/" + c.SecretPath() }

// Policy is the policy's HCL: read on the cluster's secret, nothing else.
func (c Cluster) Policy() string {
	return fmt.Sprintf("path %q {\n  capabilities = [\"read\"]\n}\n", c.dataPath())
}

func (c Cluster) rolePath() string { return "auth/approle/role/" + c.RoleName() }

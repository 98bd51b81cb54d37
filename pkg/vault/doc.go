// Package vault is the cluster-provisioner's Vault client: the objects
// through which a new RKE2 node, and only that node, gets the Rancher
// registration token without it being written into the node's user_data.
//
// Per cluster (names as Waldur Mastermind's VaultBackend makes them, so an
// operator's Vault audit and policies keep working):
//   - the policy rancher-provisioning-policy-<cluster uuid hex>, allowing
//     read of secret/data/rancher/cluster-<cluster uuid>;
//   - the AppRole rancher-provisioning-role-<cluster uuid hex> with that
//     policy, whose secret-ids and tokens are good for one use and 60 min;
//   - the KV v2 secret rancher/cluster-<cluster uuid> on the mount secret,
//     {"token": <registration token>}.
//
// Each node gets its own secret-id (NewSecretID) in its cloud-init; it logs
// in once and reads the token. Every call is ensure-style: repeating one
// after a crash neither fails nor duplicates, and deleting what is gone is
// success. Errors are classified as the backends classify theirs:
// errors.Is(err, fault.Invalid) for what no retry fixes (403, 400, a
// certificate that does not verify), anything else (5xx, 429, no answer)
// is worth retrying.
//
// Mastermind deletes the role at the end of a create and then cannot add
// a node later (it reads the deleted role's role-id); here Ensure recreates
// all three objects, so a node-add saga calls Ensure, NewSecretID per node
// and Cleanup again.
package vault

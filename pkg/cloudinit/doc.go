// Package cloudinit renders an RKE2 node's user_data for the
// cluster-provisioner: the offering's cloud_init_template (Mastermind's
// default for SUSE Linux Micro nodes unless the site gives its own, as an
// absolute file path or inline) filled in with Python str.format rules, so
// templates written for Mastermind keep working: {name} placeholders,
// {{ and }} for literal braces. An unknown or unavailable placeholder is an
// error naming it and its line (Template.Check finds it when the settings
// are loaded, before any node is made).
//
// A node with data volumes gets Mastermind's per-node rewrite: one
// wait-for-device bootcmd per volume, and disk_setup, fs_setup and mounts
// on /dev/<node_disk_driver>b, c, ... with each volume's filesystem
// (ext4 by default) and mount point.
//
// With Vault the node's user_data carries only a one-use AppRole role-id
// and secret-id and the secret's path; without Vault the registration
// token itself (see DefaultTemplate for the choice and what else differs
// from Mastermind's template).
package cloudinit

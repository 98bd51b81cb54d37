package contract

// ClusterProvisioner is the cluster-provisioner service: rancher-cluster
// orders as sagas it runs with its own coordinator. Its sagas' steps call
// keycloak-sync; it takes no commands.
const ClusterProvisioner = "cluster-provisioner"

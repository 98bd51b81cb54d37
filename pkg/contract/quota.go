package contract

// Quota is the quota service: it alone changes limits on the platforms.
// It takes no commands: Waldur's resource events and its period drive the
// flags, and Update orders reach its code through the order lifecycle
// (services/app wires quota's limits handler into services/orderflow).
const Quota = "quota"

package app

import (
	"fmt"

	"github.com/sitebus/sitebus/pkg/bus"
	"github.com/sitebus/sitebus/pkg/config"
)

// BusOrdering is the bus's ordering of partitioned subscriptions from
// sitebus.ordering (validated by config: a known mode, slots dividing the
// partitions).
func BusOrdering(cfg *config.Root) bus.Ordering {
	o := cfg.Sitebus.Ordering
	return bus.Ordering{Mode: bus.OrderingMode(o.Mode), Slots: o.Slots}
}

// DescribeOrdering is config check's line about sitebus.ordering.
func DescribeOrdering(cfg *config.Root) string {
	o := BusOrdering(cfg)
	if o.Mode == bus.OrderingCluster {
		return fmt.Sprintf("ordering: cluster, %d slots: each resource's events in order across every replica of a service; at most %d messages of a subscription in flight cluster-wide", o.Slots, o.Slots)
	}
	return "ordering: process: each resource's events in order within a process (one replica per service; set sitebus.ordering.mode: cluster to run more)"
}

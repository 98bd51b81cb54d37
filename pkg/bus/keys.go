package bus

import (
	"google.golang.org/protobuf/proto"

	"github.com/sitebus/sitebus/pkg/events"
	sitebusv1 "github.com/sitebus/sitebus/pkg/gen/sitebus/v1"
)

// WaldurEventKey is the OrderingKey of consumers of the events stream, for
// events stored without the bridge's Sitebus-Ordering-Key header (older
// data, replays of it): it reads the key from the event body.
func WaldurEventKey(_ string, data []byte) string {
	var ev sitebusv1.WaldurEvent
	if proto.Unmarshal(data, &ev) != nil {
		return ""
	}
	return events.OrderingKey(ev.ObjectType, ev.Body)
}

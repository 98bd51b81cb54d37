package bus_test

import (
	"fmt"
	"hash/fnv"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"

	"github.com/sitebus/sitebus/pkg/bus"
	"github.com/sitebus/sitebus/pkg/config"
	sitebusv1 "github.com/sitebus/sitebus/pkg/gen/sitebus/v1"
)

func TestPartitionOfAKeyIsPinned(t *testing.T) {
	// The partition is part of what is stored: these values must never
	// change, or a resource's old and new events would land in different
	// slots.
	tests := map[string]struct {
		key  string
		want int
	}{
		"no key goes to partition 0":   {key: "", want: 0},
		"resource key":                 {key: "resource:0123456789abcdef0123456789abcdef", want: 13},
		"order key":                    {key: "order:fedcba9876543210fedcba9876543210", want: 119},
		"project key":                  {key: "project:00000000000000000000000000000001", want: 95},
		"single byte (FNV-1a, 32 bit)": {key: "a", want: 44},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := bus.Partition(tc.key); got != tc.want {
				t.Errorf("Partition(%q) = %d, want %d", tc.key, got, tc.want)
			}
		})
	}
}

func TestPartitionIsFNV1a(t *testing.T) {
	// Partition hashes in place for speed; it must stay hash/fnv's 32-bit
	// FNV-1a modulo Partitions, the stored contract.
	for i := range 1000 {
		key := fmt.Sprintf("resource:%032x-%d", i*7919, i)
		h := fnv.New32a()
		_, _ = h.Write([]byte(key))
		if got, want := bus.Partition(key), int(h.Sum32()%bus.Partitions); got != want {
			t.Fatalf("Partition(%q) = %d, want %d", key, got, want)
		}
	}
}

func TestPartitionTokenIsThreeDigits(t *testing.T) {
	for p, want := range map[int]string{0: "000", 7: "007", 42: "042", 255: "255"} {
		if got := bus.PartitionToken(p); got != want {
			t.Errorf("PartitionToken(%d) = %q, want %q", p, got, want)
		}
	}
}

func TestPartitionsSpreadKeys(t *testing.T) {
	// 256 partitions and 25600 resource keys: every partition gets some, so no
	// slot sits idle while another carries the load.
	counts := make([]int, bus.Partitions)
	for i := range 100 * bus.Partitions {
		counts[bus.Partition(fmt.Sprintf("resource:%032x", i))]++
	}
	for p, n := range counts {
		if n < 50 || n > 150 {
			t.Errorf("partition %d got %d of %d keys, want about 100", p, n, 100*bus.Partitions)
		}
	}
}

func TestEventSubject(t *testing.T) {
	tests := map[string]struct {
		offering, objectType, key string
		want                      string
	}{
		"resource event goes to its resource's partition": {
			offering: "0123abcd", objectType: "resource", key: "resource:0123456789abcdef0123456789abcdef",
			want: "waldur.0123abcd.resource.013",
		},
		"order event goes to its order's partition": {
			offering: "0123abcd", objectType: "order", key: "order:fedcba9876543210fedcba9876543210",
			want: "waldur.0123abcd.order.119",
		},
		"event without a key goes to partition 000": {
			offering: "0123abcd", objectType: "user_role", key: "",
			want: "waldur.0123abcd.user_role.000",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := bus.EventSubject(tc.offering, tc.objectType, tc.key)
			if err != nil || got != tc.want {
				t.Errorf("EventSubject = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestEventFilters(t *testing.T) {
	tests := map[string]struct {
		filter string
		want   []string
	}{
		"three-token filter also takes partitioned subjects": {
			filter: "waldur.*.order", want: []string{"waldur.*.order", "waldur.*.order.*"},
		},
		"one offering's type": {
			filter: "waldur.0123abcd.resource", want: []string{"waldur.0123abcd.resource", "waldur.0123abcd.resource.*"},
		},
		"full wildcard is kept":         {filter: "waldur.>", want: []string{"waldur.>"}},
		"partitioned filter is kept":    {filter: "waldur.*.order.13", want: []string{"waldur.*.order.13"}},
		"three tokens ending in > kept": {filter: "waldur.*.>", want: []string{"waldur.*.>"}},
		"other streams' subjects kept":  {filter: "dlq.order.x", want: []string{"dlq.order.x"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := bus.EventFilters(tc.filter); !slices.Equal(got, tc.want) {
				t.Errorf("EventFilters(%q) = %q, want %q", tc.filter, got, tc.want)
			}
		})
	}
}

func TestSlotsCoverEveryPartitionOnce(t *testing.T) {
	for _, slots := range []int{1, 2, 4, 8, 16, 32, 64} {
		t.Run(fmt.Sprintf("%d slots", slots), func(t *testing.T) {
			seen := map[int]int{}
			for p := range bus.Partitions {
				s := bus.SlotOf(p, slots)
				if s < 0 || s >= slots {
					t.Fatalf("partition %d in slot %d of %d", p, s, slots)
				}
				seen[s]++
			}
			for s := range slots {
				if seen[s] != bus.Partitions/slots {
					t.Errorf("slot %d has %d partitions, want %d", s, seen[s], bus.Partitions/slots)
				}
			}
		})
	}
}

func TestSlotConsumerName(t *testing.T) {
	if got := bus.SlotConsumerName("order", 7, 32); got != "order-s007of032" {
		t.Errorf("SlotConsumerName = %q, want order-s007of032", got)
	}
}

func TestOrderingValidate(t *testing.T) {
	tests := map[string]struct {
		o       bus.Ordering
		wantErr string
	}{
		"process mode":               {o: bus.Ordering{Mode: bus.OrderingProcess, Slots: 32}},
		"cluster with one slot":      {o: bus.Ordering{Mode: bus.OrderingCluster, Slots: 1}},
		"cluster with 256 slots":     {o: bus.Ordering{Mode: bus.OrderingCluster, Slots: 256}},
		"unknown mode":               {o: bus.Ordering{Mode: "global", Slots: 32}, wantErr: `ordering mode "global" is not process or cluster`},
		"slots not dividing 256":     {o: bus.Ordering{Mode: bus.OrderingCluster, Slots: 24}, wantErr: "24 ordering slots do not divide the 256 partitions"},
		"more slots than partitions": {o: bus.Ordering{Mode: bus.OrderingCluster, Slots: 512}, wantErr: "512 ordering slots do not divide"},
		"zero slots":                 {o: bus.Ordering{Mode: bus.OrderingCluster, Slots: 0}, wantErr: "0 ordering slots do not divide"},
		"negative slots":             {o: bus.Ordering{Mode: bus.OrderingCluster, Slots: -2}, wantErr: "-2 ordering slots do not divide"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			err := tc.o.Validate()
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("Validate: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("Validate = %v, want an error with %q", err, tc.wantErr)
			}
		})
	}
}

func TestConfigAndBusAgreeOnPartitionsAndDefaults(t *testing.T) {
	// pkg/config validates sitebus.ordering without importing the bus.
	if config.OrderingPartitions != bus.Partitions {
		t.Errorf("config.OrderingPartitions = %d, bus.Partitions = %d", config.OrderingPartitions, bus.Partitions)
	}
	if string(bus.OrderingProcess) != config.OrderingProcess || string(bus.OrderingCluster) != config.OrderingCluster {
		t.Error("the ordering modes are spelt differently in pkg/config and pkg/bus")
	}
	// A Python agent's file without a sitebus section: every default.
	data, err := os.ReadFile("../config/testdata/k8s-ut-namespace.yaml")
	if err != nil {
		t.Fatal(err)
	}
	r, err := config.Parse(data, "k8s-ut-namespace.yaml", func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	if bus.OrderingMode(r.Sitebus.Ordering.Mode) != bus.OrderingProcess {
		t.Errorf("config's default mode %q, want %q", r.Sitebus.Ordering.Mode, bus.OrderingProcess)
	}
	if r.Sitebus.Ordering.Slots != bus.DefaultSlots {
		t.Errorf("config's default slots %d, bus.DefaultSlots %d", r.Sitebus.Ordering.Slots, bus.DefaultSlots)
	}
}

func TestEventsStoredWithoutPartitionGoBackToTheirPartition(t *testing.T) {
	// An event stored by a version before partitions, replayed or retried
	// from the DLQ, must land on its resource's partition, where cluster
	// ordering serialises it with the events published since.
	const offering = "0123456789abcdef0123456789abcdef"
	legacy := "waldur." + offering + ".order"
	tests := map[string]struct {
		headerKey string
		body      string
		want      string
	}{
		"key from the ordering header": {
			headerKey: "order:fedcba9876543210fedcba9876543210", body: `{}`, want: legacy + ".119",
		},
		"key from the body when stored without the header": {
			body: `{"order_uuid": "fedcba98-7654-3210-fedc-ba9876543210"}`, want: legacy + ".119",
		},
		"no key: partition 000": {body: `{}`, want: legacy + ".000"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			b := newBus(t, bus.Config{})
			ctx := testCtx(t)
			st, err := b.JetStream().Stream(ctx, bus.EventsStream)
			if err != nil {
				t.Fatal(err)
			}
			subjectOf := func(seq uint64) string {
				raw, err := st.GetMsg(ctx, seq)
				if err != nil {
					t.Fatal(err)
				}
				return raw.Subject
			}
			ev := &sitebusv1.WaldurEvent{ObjectType: "order", OfferingUuid: offering, Body: []byte(tc.body), MessageId: "m"}
			data, err := proto.Marshal(ev)
			if err != nil {
				t.Fatal(err)
			}
			h := nats.Header{}
			if tc.headerKey != "" {
				h.Set(bus.HeaderOrderingKey, tc.headerKey)
			}
			if _, err := b.PublishMsg(ctx, &nats.Msg{Subject: legacy, Header: h, Data: data}); err != nil {
				t.Fatal(err)
			}
			var replayed []string
			if _, err := b.Replay(ctx, bus.ReplayOptions{Subject: "waldur.*.order", FromSeq: 1}, func(r bus.Replayed) {
				replayed = append(replayed, subjectOf(r.NewSeq))
			}); err != nil {
				t.Fatal(err)
			}
			if len(replayed) != 1 || replayed[0] != tc.want {
				t.Errorf("replayed onto %v, want [%s]", replayed, tc.want)
			}
			if err := b.Park(ctx, bus.DeadLetter{Source: "svc", Reason: "test", Subject: legacy, Stream: bus.EventsStream, StreamSeq: 1, Header: h, Data: data}); err != nil {
				t.Fatal(err)
			}
			dls, err := b.DeadLetters(ctx, "", 0)
			if err != nil || len(dls) != 1 {
				t.Fatalf("dead letters %v, %v", dls, err)
			}
			ack, err := b.RetryDeadLetter(ctx, dls[0].Seq)
			if err != nil {
				t.Fatal(err)
			}
			if got := subjectOf(ack.Sequence); got != tc.want {
				t.Errorf("retried onto %s, want %s", got, tc.want)
			}
		})
	}
}

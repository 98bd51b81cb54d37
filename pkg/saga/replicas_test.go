package saga_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sitebus/sitebus/pkg/bus/bustest"
	"github.com/sitebus/sitebus/pkg/saga"
)

// members is a stream's configured replica count and how many servers
// hold it now.
func members(ctx context.Context, js jetstream.JetStream, stream string) (config, placed int, err error) {
	s, err := js.Stream(ctx, stream)
	if err != nil {
		return 0, 0, err
	}
	info, err := s.Info(ctx)
	if err != nil {
		return 0, 0, err
	}
	if c := info.Cluster; c != nil && c.Leader != "" {
		placed = 1 + len(c.Replicas)
	}
	return info.Config.Replicas, placed, nil
}

func waitReplicas(t *testing.T, ctx context.Context, js jetstream.JetStream, stream string, want int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		cfg, placed, err := members(ctx, js, stream)
		if err == nil && cfg == want && placed == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: config replicas %d on %d servers (%v), want %d", stream, cfg, placed, err, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestBucketAndOutcomeStreamFollowTheReplicaCount(t *testing.T) {
	c := bustest.StartCluster(t, 3)
	js, err := jetstream.New(c.Connect(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	def := saga.Definition{Name: "one", Steps: []saga.Step{{Name: "a", Action: "a.do"}}}
	acts := map[string]saga.Activity{"a.do": func(context.Context, saga.ActivityInput) (json.RawMessage, error) { return nil, nil }}
	bucket := "KV_" + saga.DefaultBucket

	r1 := newCoordinator(t, js, saga.Config{Replicas: 1}, []saga.Definition{def}, acts)
	if _, err := r1.Start(ctx, "one", "s1", nil); err != nil {
		t.Fatal(err)
	}
	if err := r1.EnsureStream(ctx); err != nil {
		t.Fatal(err)
	}
	waitReplicas(t, ctx, js, bucket, 1)
	waitReplicas(t, ctx, js, saga.Stream, 1)

	// A process started with replicas: 3 rescales what exists.
	r3 := newCoordinator(t, js, saga.Config{Replicas: 3}, []saga.Definition{def}, acts)
	// Start writes right after rescaling the bucket: a write sent while
	// the bucket moves to its new servers would get no answer.
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := r3.Start(sctx, "one", "s1", nil); err != nil {
		t.Fatal(err)
	}
	if err := r3.EnsureStream(ctx); err != nil {
		t.Fatal(err)
	}
	waitReplicas(t, ctx, js, bucket, 3)
	waitReplicas(t, ctx, js, saga.Stream, 3)
	if s, err := r3.Get(ctx, "s1"); err != nil || s.Definition != "one" {
		t.Fatalf("saga after rescaling: %+v, %v", s, err)
	}

	// A reader (the sagas CLI) with the default count rescales nothing.
	reader := newCoordinator(t, js, saga.Config{}, []saga.Definition{def}, acts)
	if _, err := reader.List(ctx, saga.Filter{}); err != nil {
		t.Fatal(err)
	}
	if cfg, _, err := members(ctx, js, bucket); err != nil || cfg != 3 {
		t.Fatalf("after a read-only List: %d replicas (%v), want 3", cfg, err)
	}
}

// Command fuzzcorpus writes seed corpus files for the fuzz targets of the
// decoders of Waldur's answers and events (testdata/fuzz/<target>/ of the
// packages under test) from what the Waldur simulator really sends: its
// REST answers (with their Link pagination headers and error bodies) and
// the STOMP event bodies it publishes, encoded as Mastermind encodes them.
// Run it from the repository root once after the simulator's wire format
// changes, and commit what it writes:
//
//	go run ./e2e/cmd/fuzzcorpus
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/sitebus/sitebus/e2e/waldursim"
)

func main() {
	if err := run(); err != nil {
		log.Fatal(err)
	}
}

func run() error {
	fx, err := waldursim.LoadFixture("e2e/waldursim/testdata/fixture.yaml")
	if err != nil {
		return err
	}
	sim, err := waldursim.New(waldursim.Config{Fixture: fx, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return err
	}
	srv := httptest.NewServer(sim.Handler())
	defer srv.Close()
	token := fx.Users[0].Token
	ctx := context.Background()
	if _, err := waldursim.NewAdminClient(srv.URL).CreateOrder(ctx, waldursim.CreateOrderRequest{
		ResourceName: "Genomics Pipeline", ResourceSlug: "genomics-pipeline", Limits: map[string]int{"cpu": 2, "ram": 4},
		Attributes: map[string]any{"name": "genomics-pipeline"}, Silent: true}); err != nil {
		return fmt.Errorf("create order: %w", err)
	}

	// Waldur's REST answers, as FuzzWaldurAnswer takes them.
	var answers [][]any
	for _, c := range []struct{ path, tok string }{
		{"/api/marketplace-orders/?page_size=1", token},
		{"/api/marketplace-orders/?page_size=100", token},
		{"/api/marketplace-provider-resources/?page_size=1", token},
		{"/api/marketplace-orders/00000000000040008000000000000000/", token},
		{"/api/marketplace-orders/", "wrong-token"},
		{"/api/marketplace-orders/", ""},
	} {
		status, link, body, err := get(srv.URL+c.path, c.tok)
		if err != nil {
			return err
		}
		answers = append(answers, []any{status, link, body})
	}
	if err := write("pkg/waldur/testdata/fuzz/FuzzWaldurAnswer", answers); err != nil {
		return err
	}

	// STOMP event bodies, as the simulator publishes them (events.go):
	// Mastermind's Python json.dumps spacing, offering_uuid added last.
	// The offering is the one FuzzDecode's bridge subscribes for.
	offering := "0123456789abcdef0123456789abcdef"
	res := fx.Resources[0]
	obj := func(kv ...any) string {
		o := waldursim.PyObject{}
		for i := 0; i < len(kv); i += 2 {
			o = o.Set(kv[i].(string), kv[i+1])
		}
		return o.Set("offering_uuid", offering).Encode()
	}
	bodies := map[string]string{
		"order": obj("order_uuid", "b0000000000040008000000000000001", "order_state", "pending-provider"),
		"resource": obj("resource_uuid", res.UUID, "resource_backend_id", res.BackendID, "downscaled", false,
			"restrict_member_access", false, "paused", false, "sequence_number", 1),
		"user_role": obj("user_uuid", fx.Users[0].UUID, "user_username", fx.Users[0].Username, "project_uuid", fx.Projects[0].UUID,
			"project_name", fx.Projects[0].Name, "role_name", "PROJECT.ADMIN", "granted", true),
	}
	var inspect, frames [][]any
	const sub = "3f1c2b7e9a4d4c8e8f0a1b2c3d4e5f60"
	for _, typ := range []string{"order", "resource", "user_role"} {
		inspect = append(inspect, []any{typ, []byte(bodies[typ])})
		queue := "subscription_" + sub + "_offering_" + offering + "_" + typ
		topic := waldursim.Topic(sub, offering, typ)
		frames = append(frames, []any{typ, "/queue/" + queue, waldursim.MessageID("/", topic, bodies[typ]), []byte(bodies[typ])})
	}
	if err := write("pkg/events/testdata/fuzz/FuzzInspect", inspect); err != nil {
		return err
	}
	return write("services/stompbridge/testdata/fuzz/FuzzDecode", frames)
}

func get(url, tok string) (int, string, []byte, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return 0, "", nil, err
	}
	if tok != "" {
		req.Header.Set("Authorization", "Token "+tok)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	// The simulator's own address means nothing to the fuzz target,
	// which answers for https://waldur.example.
	here := "http://" + req.URL.Host
	link := strings.ReplaceAll(resp.Header.Get("Link"), here, "https://waldur.example")
	return resp.StatusCode, link, []byte(strings.ReplaceAll(string(body), here, "https://waldur.example")), err
}

// write stores each entry as a file in go test's corpus format, named by
// the hash of its content as go test names the entries it finds.
func write(dir string, entries [][]any) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, e := range entries {
		var b strings.Builder
		b.WriteString("go test fuzz v1\n")
		for _, v := range e {
			switch v := v.(type) {
			case int:
				b.WriteString("int(" + strconv.Itoa(v) + ")\n")
			case string:
				b.WriteString("string(" + strconv.Quote(v) + ")\n")
			case []byte:
				b.WriteString("[]byte(" + strconv.Quote(string(v)) + ")\n")
			}
		}
		sum := sha256.Sum256([]byte(b.String()))
		if err := os.WriteFile(filepath.Join(dir, "sim-"+hex.EncodeToString(sum[:8])), []byte(b.String()), 0o644); err != nil {
			return err
		}
	}
	fmt.Printf("%s: %d entries\n", dir, len(entries))
	return nil
}

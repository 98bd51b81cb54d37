package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// WaitReadyz polls http://httpAddr/readyz every `every` until it answers
// 200. It fails when ctx ends or when p (if not nil) exits first.
func WaitReadyz(ctx context.Context, httpAddr string, every time.Duration, p *Process) error {
	client := &http.Client{Timeout: 2 * time.Second}
	url := "http://" + httpAddr + "/readyz"
	t := time.NewTicker(every)
	defer t.Stop()
	last := "no answer"
	for {
		code, body, err := get(ctx, client, url)
		switch {
		case err == nil && code == http.StatusOK:
			return nil
		case err == nil:
			last = fmt.Sprintf("%d %s", code, strings.TrimSpace(body))
		case !errors.Is(err, context.Canceled):
			last = err.Error()
		}
		if p != nil && p.Exited() {
			return fmt.Errorf("%s exited before /readyz said 200:\n%s", p.Name, p.Tail(40))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not ready (last /readyz: %s): %w", httpAddr, last, ctx.Err())
		case <-t.C:
		}
	}
}

func get(ctx context.Context, client *http.Client, url string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, "", err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

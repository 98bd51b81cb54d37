package simkit

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Call is one logged request.
type Call struct {
	Time     time.Time
	Method   string
	Path     string
	Query    string // raw, as sent
	Body     string // empty unless FaultOptions.KeepBody keeps it
	Status   int    // 0 when the connection was dropped or the client left
	Duration time.Duration
	Faulted  bool   // answered (or delayed) by a fault or Down
	Label    string `json:",omitempty"` // FaultOptions.Label's
}

// Fault makes requests matching Method (empty: any), PathPrefix (empty:
// any) and QueryContains (empty: any) misbehave: wait Delay (a hang; the
// request ends early only if the client gives up), then answer Status with
// Body (default: FaultOptions.ErrorBody), or drop the connection (Drop), or
// pass through (Status 0, no Drop). Count limits it to the next Count
// matching requests; 0 means until Clear. Go's transport silently resends
// an idempotent request once when a reused connection is dropped before
// any response, so a Drop with Count 1 may go unnoticed.
//
// ContentType, Size and Trickle shape an answer with a Status into the
// misbehaviours of a broken peer or a proxy in front of it: a wrong
// content type, a huge body (Body repeated up to Size bytes, streamed so
// the simulator holds none of it) and a slow trickle (headers at once,
// then the body a byte every Trickle; with no Body and no Size it drips
// spaces until the client leaves).
type Fault struct {
	Method        string
	PathPrefix    string
	QueryContains string
	Status        int
	Body          string
	Delay         time.Duration
	Drop          bool
	Count         int
	// ContentType, when set, replaces the Content-Type the body implies.
	ContentType string
	// Size, when positive, is the length of the body: Body repeated (a
	// space when empty) and cut at Size bytes.
	Size int64
	// Trickle, when positive, is the wait between the body's bytes.
	Trickle time.Duration
}

// FaultOptions are what the simulators' fault injection differs in.
type FaultOptions struct {
	// DownBody is the body of the 503 every request gets while down.
	DownBody string
	// ErrorBody is the body of a fault with a Status and no Body, in the
	// simulated service's error format.
	ErrorBody func(status int) string
	// KeepBody says whether the call log keeps a request's body (its first
	// maxLoggedBody bytes, which is then all the handler reads); nil keeps
	// none (e.g. token requests carry passwords).
	KeepBody func(r *http.Request) bool
	// Label, when set, gives a logged call its Label (e.g. which token it
	// carried, named without revealing it).
	Label func(r *http.Request) string
}

// maxLoggedBody bounds what the call log keeps of a request body.
const maxLoggedBody = 1 << 20

// Faults holds the injected faults, the down switch and the call log of
// one simulator, and applies them in Middleware.
type Faults struct {
	opts FaultOptions

	mu       sync.Mutex
	faults   []*Fault // Count: how many answers are left (0: unlimited)
	calls    []Call
	down     bool
	inflight map[string]int // requests being served, by path
	answered *sync.Cond     // signalled (under mu) as each is logged
}

// NewFaults returns an empty registry.
func NewFaults(opts FaultOptions) *Faults {
	fs := &Faults{opts: opts, inflight: map[string]int{}}
	fs.answered = sync.NewCond(&fs.mu)
	return fs
}

// WaitAnswered waits until no request whose path match accepts is being
// served. A handler changes the simulator's state before it answers, as
// the real service commits before it responds: a test that saw the change
// waits here before it reads the call log for the call that made it.
func (fs *Faults) WaitAnswered(ctx context.Context, match func(path string) bool) error {
	defer context.AfterFunc(ctx, func() { fs.mu.Lock(); fs.answered.Broadcast(); fs.mu.Unlock() })()
	fs.mu.Lock()
	defer fs.mu.Unlock()
	for {
		var busy []string
		for p := range fs.inflight {
			if match(p) {
				busy = append(busy, p)
			}
		}
		if len(busy) == 0 {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("requests to %v are still being served: %w", busy, err)
		}
		fs.answered.Wait()
	}
}

// AddFault injects f; faults are matched in the order they were added.
func (fs *Faults) AddFault(f Fault) {
	fs.mu.Lock()
	fs.faults = append(fs.faults, &f)
	fs.mu.Unlock()
}

// ClearFaults removes every fault (not Down).
func (fs *Faults) ClearFaults() {
	fs.mu.Lock()
	fs.faults = nil
	fs.mu.Unlock()
}

// Down makes every request answer 503 with DownBody, as the service
// behind its proxy does while it restarts, until Down(false). For a
// connection-level failure use AddFault(Fault{Drop: true}).
func (fs *Faults) Down(down bool) {
	fs.mu.Lock()
	fs.down = down
	fs.mu.Unlock()
}

// Calls returns a copy of the call log, oldest first.
func (fs *Faults) Calls() []Call {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return append([]Call(nil), fs.calls...)
}

// CallCount counts logged requests matching method (empty: any) and path
// prefix; with status > 0 only those answered with that status.
func (fs *Faults) CallCount(method, pathPrefix string, status int) int {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	n := 0
	for _, c := range fs.calls {
		if (method == "" || strings.EqualFold(method, c.Method)) && strings.HasPrefix(c.Path, pathPrefix) &&
			(status == 0 || c.Status == status) {
			n++
		}
	}
	return n
}

// ResetCalls empties the call log.
func (fs *Faults) ResetCalls() {
	fs.mu.Lock()
	fs.calls = nil
	fs.mu.Unlock()
}

// begin counts r as being served (until Middleware logs it) and returns
// the fault that answers it, if any, counting that down.
func (fs *Faults) begin(r *http.Request) *Fault {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.inflight[r.URL.Path]++
	if fs.down {
		return &Fault{Status: http.StatusServiceUnavailable, Body: fs.opts.DownBody}
	}
	for i, f := range fs.faults {
		if (f.Method == "" || strings.EqualFold(f.Method, r.Method)) && strings.HasPrefix(r.URL.Path, f.PathPrefix) &&
			strings.Contains(r.URL.RawQuery, f.QueryContains) {
			if f.Count > 0 {
				f.Count--
				if f.Count == 0 {
					fs.faults = append(fs.faults[:i], fs.faults[i+1:]...)
				}
			}
			cp := *f
			return &cp
		}
	}
	return nil
}

// Middleware logs every request and applies Down and faults before next.
func (fs *Faults) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		var body []byte
		if fs.opts.KeepBody != nil && fs.opts.KeepBody(r) {
			body, _ = io.ReadAll(io.LimitReader(r.Body, maxLoggedBody))
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		rec := &statusRecorder{ResponseWriter: w}
		path := r.URL.Path
		f := fs.begin(r)
		defer func() {
			label := ""
			if fs.opts.Label != nil {
				label = fs.opts.Label(r)
			}
			fs.mu.Lock()
			fs.calls = append(fs.calls, Call{Label: label,
				Time: start, Method: r.Method, Path: path, Query: r.URL.RawQuery, Body: string(body),
				Status: rec.status, Duration: time.Since(start), Faulted: f != nil,
			})
			if fs.inflight[path]--; fs.inflight[path] == 0 {
				delete(fs.inflight, path)
			}
			fs.answered.Broadcast()
			fs.mu.Unlock()
		}()
		if f != nil {
			if f.Delay > 0 {
				t := time.NewTimer(f.Delay)
				select {
				case <-t.C:
				case <-r.Context().Done():
					t.Stop()
					return
				}
			}
			switch {
			case f.Drop:
				dropConn(w)
				return
			case f.Status != 0:
				b := f.Body
				if b == "" && fs.opts.ErrorBody != nil {
					b = fs.opts.ErrorBody(f.Status)
				}
				ct := "application/json"
				if !strings.HasPrefix(b, "{") {
					ct = "text/plain; charset=utf-8"
				}
				rec.Header().Set("Content-Type", cmp.Or(f.ContentType, ct))
				rec.WriteHeader(f.Status)
				writeBody(r, rec, f, b)
				return
			}
		}
		next.ServeHTTP(rec, r)
	})
}

// writeBody writes f's body b: as it is, repeated up to f.Size bytes,
// and a byte every f.Trickle. It stops when the client leaves.
func writeBody(r *http.Request, w http.ResponseWriter, f *Fault, b string) {
	if f.Size <= 0 && f.Trickle <= 0 {
		_, _ = io.WriteString(w, b)
		return
	}
	var body io.Reader = strings.NewReader(b)
	if f.Size > 0 || b == "" {
		unit := cmp.Or(b, " ")
		// Repeated to 32 KiB, so a huge body is written in big pieces.
		unit = strings.Repeat(unit, max(1, 32<<10/len(unit)))
		body = &repeated{unit: unit}
		if f.Size > 0 {
			body = io.LimitReader(body, f.Size)
		}
	}
	if f.Trickle <= 0 {
		_, _ = io.Copy(w, body)
		return
	}
	rc := http.NewResponseController(w)
	_ = rc.Flush() // the headers now: the peer answered, slowly
	one := make([]byte, 1)
	t := time.NewTicker(f.Trickle)
	defer t.Stop()
	for {
		if _, err := body.Read(one); err != nil {
			return
		}
		select {
		case <-t.C:
		case <-r.Context().Done():
			return
		}
		if _, err := w.Write(one); err != nil {
			return
		}
		if rc.Flush() != nil {
			return
		}
	}
}

// repeated reads unit over and over, without end.
type repeated struct {
	unit string
	off  int
}

func (r *repeated) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		c := copy(p[n:], r.unit[r.off:])
		n += c
		r.off = (r.off + c) % len(r.unit)
	}
	return n, nil
}

// dropConn closes the connection without a response.
func dropConn(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	_ = conn.Close()
}

// statusRecorder passes a response through and remembers its status, for
// the call log.
type statusRecorder struct {
	http.ResponseWriter
	// status is the status written so far; 0 when nothing was (the
	// connection was dropped or the client left).
	status int
}

// WriteHeader records the first status.
func (r *statusRecorder) WriteHeader(code int) {
	r.status = cmp.Or(r.status, code)
	r.ResponseWriter.WriteHeader(code)
}

// Write records an implicit 200.
func (r *statusRecorder) Write(b []byte) (int, error) {
	r.status = cmp.Or(r.status, http.StatusOK)
	return r.ResponseWriter.Write(b)
}

// Flush lets a proxy (ranchersim's Kubernetes watches) stream through.
func (r *statusRecorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

package harness

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// ServiceProcess is one `sitebus run --only <service>` process of a
// distributed site: what one pod of a service's Deployment runs.
type ServiceProcess struct {
	Service string
	Replica int // 1-based
	*Sitebus
}

// DistributedOptions configure a site that runs every service as its own
// process against a NATS cluster, as the Helm chart deploys it.
type DistributedOptions struct {
	// Config is the configuration file every process reads (the chart's
	// one Secret).
	Config string
	// NATSURL is the cluster's client URLs, comma-separated.
	NATSURL string
	// Services are started in this order (app.ServiceNames).
	Services []string
	// Replicas is the number of processes per service; a service not
	// listed runs one.
	Replicas map[string]int
	// Env is added to every process's environment.
	Env []string
}

// Distributed is a running distributed site. Like a Deployment's
// kubelet, it starts a process again when it exits on its own (a crash, or
// a service giving up on startup), and counts those exits: a test reports
// them rather than run on with a service missing.
type Distributed struct {
	Procs []*ServiceProcess
	env   []string
	t     testing.TB

	mu      sync.Mutex // serialises starts, stops and the supervisor
	stopped map[*ServiceProcess]bool
	exits   map[string]int
}

// StartDistributed starts every process, each with its own data dir
// (identity and lock) and HTTP port, and waits until all of them say ready.
func StartDistributed(t testing.TB, o DistributedOptions) *Distributed {
	t.Helper()
	if o.NATSURL == "" {
		t.Fatal("a distributed site needs an external NATS (NATSURL)")
	}
	d := &Distributed{env: o.Env, t: t, stopped: map[*ServiceProcess]bool{}, exits: map[string]int{}}
	for _, svc := range o.Services {
		n := o.Replicas[svc]
		if n == 0 {
			n = 1
		}
		for r := 1; r <= n; r++ {
			sb := PrepareSitebus(t, SitebusOptions{Config: o.Config, NATSURL: o.NATSURL, Env: o.Env,
				Args: []string{"--only", svc}, Name: fmt.Sprintf("%s-%d", svc, r)})
			d.Procs = append(d.Procs, &ServiceProcess{Service: svc, Replica: r, Sitebus: sb})
		}
	}
	for _, p := range d.Procs {
		p.Start(o.Env...)
	}
	go d.supervise(t.Context())
	if err := d.WaitReady(2 * time.Minute); err != nil {
		t.Fatal(err)
	}
	return d
}

// supervise restarts processes that exited without being told to, until
// ctx (the test's) ends.
func (d *Distributed) supervise(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(200 * time.Millisecond):
		}
		d.mu.Lock()
		for _, p := range d.Procs {
			if d.stopped[p] || !p.Exited() || ctx.Err() != nil {
				continue
			}
			d.exits[p.Name]++
			d.t.Logf("%s exited on its own; starting it again, as the kubelet would. Its last lines:\n%s", p.Name, p.Tail(8))
			p.Start(d.env...)
		}
		d.mu.Unlock()
	}
}

// Exits is how many times each process exited on its own.
func (d *Distributed) Exits() map[string]int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return maps.Clone(d.exits)
}

// Service returns the processes of one service.
func (d *Distributed) Service(name string) []*ServiceProcess {
	var out []*ServiceProcess
	for _, p := range d.Procs {
		if p.Service == name {
			out = append(out, p)
		}
	}
	return out
}

// WaitReady waits until every process's /readyz says 200, concurrently.
func (d *Distributed) WaitReady(timeout time.Duration) error {
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for _, p := range d.Procs {
		wg.Go(func() {
			if err := d.waitReady(p, timeout); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// waitReady polls the process's /readyz, whichever run of it answers.
func (d *Distributed) waitReady(p *ServiceProcess, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	last := "no answer"
	for time.Now().Before(deadline) {
		code, body := p.Get("/readyz")
		if code == http.StatusOK {
			return nil
		}
		if code != 0 {
			last = fmt.Sprintf("%d %s", code, strings.TrimSpace(body))
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("%s not ready within %s (last /readyz: %s)\n%s", p.Name, timeout, last, p.Tail(30))
}

// KillAndRestart kill -9s the process (no drain, no ack, no lease
// handed over), starts it again with the same data dir and port, and waits
// until it is ready.
func (d *Distributed) KillAndRestart(p *ServiceProcess, timeout time.Duration) error {
	d.mu.Lock()
	p.Kill()
	p.Start(d.env...)
	d.mu.Unlock()
	return d.waitReady(p, timeout)
}

// Stop stops the process gracefully (SIGTERM: it drains and hands its
// work back), as when a Deployment scales down; it stays down until Start.
func (d *Distributed) Stop(p *ServiceProcess) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.stopped[p] = true
	_ = p.Stop(30 * time.Second) // its exit status is no concern here
}

// Start starts a stopped process again with the same data dir and port,
// and waits until it is ready.
func (d *Distributed) Start(p *ServiceProcess, timeout time.Duration) error {
	d.mu.Lock()
	delete(d.stopped, p)
	p.Start(d.env...)
	d.mu.Unlock()
	return d.waitReady(p, timeout)
}

// Pause stops the process with SIGSTOP: it keeps its sockets and memory
// but answers nothing until Resume.
func (p *Process) Pause() error { return p.signal(syscall.SIGSTOP) }

// Resume continues a paused process (SIGCONT).
func (p *Process) Resume() error { return p.signal(syscall.SIGCONT) }

func (p *Process) signal(sig syscall.Signal) error {
	if p.cmd == nil || p.cmd.Process == nil {
		return fmt.Errorf("%s was never started", p.Name)
	}
	if p.Exited() {
		return fmt.Errorf("%s has exited", p.Name)
	}
	return p.cmd.Process.Signal(sig)
}

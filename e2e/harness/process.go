package harness

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Process is a child process whose output is kept for failure messages.
type Process struct {
	Name string
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan struct{}
	err  error
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
	tee io.Writer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.tee != nil {
		_, _ = b.tee.Write(p)
	}
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// StartProcess runs bin with args and env (added to the current one).
// SITEBUS_E2E_VERBOSE=1 streams its output to the test's stderr.
func StartProcess(name, bin string, args, env []string) (*Process, error) {
	var tee io.Writer
	if os.Getenv("SITEBUS_E2E_VERBOSE") != "" {
		tee = os.Stderr
	}
	return StartProcessTee(name, bin, args, env, tee)
}

// StartProcessTee is StartProcess with the output also copied to w (when
// not nil), each line prefixed "[name] ": for local runs that show it live.
func StartProcessTee(name, bin string, args, env []string, w io.Writer) (*Process, error) {
	p := &Process{Name: name, out: &syncBuffer{}, done: make(chan struct{})}
	if w != nil {
		p.out.tee = prefixWriter{prefix: "[" + name + "] ", w: w}
	}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	return p, nil
}

// Output is everything the process printed so far.
func (p *Process) Output() string { return p.out.String() }

// Pid is the process id (0 before the process was started).
func (p *Process) Pid() int {
	if p.cmd == nil || p.cmd.Process == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// Done is closed when the process has ended.
func (p *Process) Done() <-chan struct{} { return p.done }

// Exited reports whether the process has ended.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Kill sends SIGKILL and waits for the process to end: a crash, with no
// chance to ack, drain or flush anything.
func (p *Process) Kill() {
	if p.Exited() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// Stop sends SIGTERM and waits up to grace before killing.
func (p *Process) Stop(grace time.Duration) error {
	if p.Exited() {
		return nil
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return p.err
	case <-time.After(grace):
		p.Kill()
		return fmt.Errorf("%s did not stop within %s", p.Name, grace)
	}
}

// Tail returns the last n lines of output.
func (p *Process) Tail(n int) string {
	lines := strings.Split(strings.TrimRight(p.Output(), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// cleanup registers a kill and, on failure, the output tail.
func (p *Process) cleanup(t testing.TB) {
	t.Cleanup(func() {
		p.Kill()
		if t.Failed() {
			t.Logf("--- %s output (tail) ---\n%s", p.Name, p.Tail(60))
		}
	})
}

type prefixWriter struct {
	prefix string
	w      io.Writer
}

func (pw prefixWriter) Write(p []byte) (int, error) {
	for _, line := range strings.SplitAfter(string(p), "\n") {
		if line != "" {
			_, _ = io.WriteString(pw.w, pw.prefix+line)
		}
	}
	return len(p), nil
}

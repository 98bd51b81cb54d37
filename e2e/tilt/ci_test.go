package tilt

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sitebus/sitebus/e2e/kube"
	"github.com/sitebus/sitebus/e2e/rabbitmq"
	"github.com/sitebus/sitebus/e2e/testenv"
)

// TestLocalModeUnderTiltCI runs `tilt ci` on the repository's Tiltfile
// without a Kubernetes context: the local mode builds sitebus and brings
// the local site up (RabbitMQ, the simulators, a control plane, sitebus
// with its embedded NATS) until sitebus answers /readyz, then Tilt exits
// with success and nothing it started keeps running.
func TestLocalModeUnderTiltCI(t *testing.T) {
	bin := tiltBinary(t)
	rabbitmq.Require(t)
	kube.Require(t)
	root := repoRoot(t)
	dir := t.TempDir()
	// Everything Tilt starts inherits TMPDIR and the tag; what keeps
	// either after Tilt has exited was left behind.
	// Not under t.TempDir(), whose parent is 0700: RabbitMQ runs as its
	// own user and must reach its directory under TMPDIR.
	tmp, err := os.MkdirTemp("", "sitebus-tilt-ci-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(tmp) })
	if err := os.Chmod(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	tag := fmt.Sprintf("SITEBUS_TILT_TEST=%d-%d", os.Getpid(), time.Now().UnixNano())
	env := tiltEnv(t, writeKubeconfig(t, ""), dir, "TMPDIR="+tmp, tag)
	ports, err := testenv.FreePorts(5)
	if err != nil {
		t.Fatal(err)
	}
	addr := func(i int) string { return "127.0.0.1:" + strconv.Itoa(ports[i]) }
	args := []string{"ci", "--port", "0", "--timeout", "10m", "--file", filepath.Join(root, "Tiltfile"), "--",
		"--http-addr=" + addr(0), "--nats-listen=" + addr(1), "--sim-listen=" + addr(2),
		"--keycloak-listen=" + addr(3), "--rancher-listen=" + addr(4)}

	logPath := filepath.Join(dir, "tilt.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = logFile.Close() })
	cmd := exec.Command(bin, args...)
	cmd.Dir, cmd.Env = root, env
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Its own process group, so the cleanup can stop all of it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// exited is closed once tilt has exited; runErr is Wait's result then.
	exited := make(chan struct{})
	var runErr error
	go func() { runErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		stopGroup(cmd.Process.Pid, exited)
		for _, p := range leftovers(tag, tmp) {
			_ = syscall.Kill(p.pid, syscall.SIGKILL)
		}
	})

	// tilt ci's own --timeout bounds the run; this only guards against
	// tilt itself hanging past it.
	select {
	case <-exited:
	case <-time.After(12 * time.Minute):
		stopGroup(cmd.Process.Pid, exited)
		t.Fatalf("tilt ci still running after 12 min:\n%s", tail(logPath, 60))
	}
	out, _ := os.ReadFile(logPath)
	if runErr != nil || !bytes.Contains(out, []byte("SUCCESS. All workloads are healthy.")) {
		t.Fatalf("tilt ci: %v\n%s", runErr, tail(logPath, 80))
	}
	t.Logf("tilt ci succeeded in %s", time.Since(start).Round(time.Second))
	// Only what comes before the signal waited on: tilt ci ends when the
	// readiness probe (sitebus's /readyz) passes, which may be before
	// sitebus-dev logs its own "sitebus ready", so that line is no proof
	// of anything here (a CI run failed on its absence).
	if want := "sitebus: local mode"; !bytes.Contains(out, []byte(want)) {
		t.Errorf("tilt's log lacks %q:\n%s", want, tail(logPath, 60))
	}

	// Tilt stops the site on exit (SIGTERM to sitebus-dev, which stops
	// sitebus, RabbitMQ and the control plane). Wait for that to finish.
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	for {
		left := leftovers(tag, tmp)
		if len(left) == 0 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("processes left running after tilt ci exited:\n%s", left)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// stopGroup ends tilt and everything in its process group unless it has
// exited: SIGTERM (Tilt then stops its processes), SIGKILL if it is still
// running after a minute.
func stopGroup(pid int, exited <-chan struct{}) {
	select {
	case <-exited:
		return
	default:
	}
	_ = syscall.Kill(-pid, syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(time.Minute):
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		<-exited
	}
}

type proc struct {
	pid     int
	cmdline string
}

type procs []proc

func (ps procs) String() string {
	var b strings.Builder
	for _, p := range ps {
		fmt.Fprintf(&b, "  %d %s\n", p.pid, p.cmdline)
	}
	return b.String()
}

// leftovers are the processes whose environment holds tag or whose
// command line names dir (RabbitMQ starts with a fresh environment, but
// its files are under TMPDIR).
func leftovers(tag, dir string) procs {
	entries, _ := os.ReadDir("/proc")
	var out procs
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		environ, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if bytes.Contains(environ, []byte(tag)) || bytes.Contains(cmdline, []byte(dir)) {
			out = append(out, proc{pid: pid, cmdline: strings.Join(strings.Fields(strings.ReplaceAll(string(cmdline), "\x00", " ")), " ")})
		}
	}
	return out
}

// tail is the last n lines of the file at path.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

package rabbitmq

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sitebus/sitebus/e2e/testenv"
)

// WebSTOMPPath is the Web-STOMP endpoint path Waldur deploys (and the site
// agent defaults to).
const WebSTOMPPath = "/rmqws-stomp"

// defaultStartTimeout bounds a node's boot. It is a bound on a hang, not a
// measure: on a loaded 2-core machine (a test-repeat beside a CI run) a
// node has taken more than 100 s between its feature flags and its
// listeners, and 90 s failed a test that had nothing wrong.
const defaultStartTimeout = 3 * time.Minute

// Options tune Start. The zero value is fine.
type Options struct {
	// StartTimeout bounds the wait for the listeners; default
	// defaultStartTimeout.
	StartTimeout time.Duration
	// AdminUser and AdminPass name the administrator created at first boot;
	// defaults are "admin" and a random password.
	AdminUser, AdminPass string
	// ExtraConfig is appended to rabbitmq.conf (new-style sysctl format).
	ExtraConfig string
	// KeepDir leaves the node directory behind after Stop, for debugging.
	KeepDir bool
	// Logger receives progress messages; default slog.Default().
	Logger *slog.Logger
}

// Broker is a running scratch node. All listeners are on 127.0.0.1.
type Broker struct {
	Dir      string // node directory (config, mnesia, logs)
	NodeName string

	AMQPPort, STOMPPort, WebSTOMPPort, MgmtPort int
	DistPort, EPMDPort                          int

	AdminUser, AdminPass string

	log        *slog.Logger
	keepDir    bool
	env        []string
	cred       *syscall.Credential
	server     *exec.Cmd
	exited     chan struct{}
	epmd       *exec.Cmd
	epmdExited chan struct{}
	stopOnce   sync.Once
	stopErr    error
}

// STOMPAddr is the host:port of the plain TCP STOMP listener.
func (b *Broker) STOMPAddr() string { return hostPort(b.STOMPPort) }

// WebSTOMPAddr is the host:port of the Web-STOMP listener.
func (b *Broker) WebSTOMPAddr() string { return hostPort(b.WebSTOMPPort) }

// WebSTOMPURL is the ws:// URL of the Web-STOMP endpoint.
func (b *Broker) WebSTOMPURL() string { return "ws://" + b.WebSTOMPAddr() + WebSTOMPPath }

// MgmtURL is the base URL of the management API (without /api).
func (b *Broker) MgmtURL() string { return "http://" + hostPort(b.MgmtPort) }

// Mgmt returns a management API client logged in as the admin user.
func (b *Broker) Mgmt() *Mgmt { return NewMgmt(b.MgmtURL(), b.AdminUser, b.AdminPass) }

func hostPort(p int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(p)) }

// Start boots a scratch node and waits until STOMP, Web-STOMP and the
// management API answer. The caller must Stop it.
func Start(ctx context.Context, opts Options) (*Broker, error) {
	if err := Available(); err != nil {
		return nil, err
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = defaultStartTimeout
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.AdminUser == "" {
		opts.AdminUser = "admin"
	}
	if opts.AdminPass == "" {
		opts.AdminPass = randomHex(12)
	}
	cred, err := rabbitmqCredential()
	if err != nil {
		return nil, err
	}
	ports, err := testenv.FreePorts(7)
	if err != nil {
		return nil, err
	}
	// MkdirTemp under /tmp, not t.TempDir: the parents of t.TempDir are 0700
	// root, which user rabbitmq cannot traverse.
	dir, err := os.MkdirTemp("", "sitebus-rabbitmq-")
	if err != nil {
		return nil, err
	}
	b := &Broker{
		Dir:          dir,
		NodeName:     "sitebus-" + randomHex(6) + "@localhost",
		AMQPPort:     ports[0],
		STOMPPort:    ports[1],
		WebSTOMPPort: ports[2],
		MgmtPort:     ports[3],
		DistPort:     ports[4],
		EPMDPort:     ports[5],
		AdminUser:    opts.AdminUser,
		AdminPass:    opts.AdminPass,
		log:          opts.Logger,
		keepDir:      opts.KeepDir,
		cred:         cred,
		exited:       make(chan struct{}),
	}
	b.env = b.environ(ports[6])
	if err := b.writeFiles(opts.ExtraConfig); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	started := time.Now()
	if err := b.startEPMD(ctx); err != nil {
		_ = b.Stop()
		return nil, err
	}
	if err := b.startServer(); err != nil {
		_ = b.Stop()
		return nil, err
	}
	wctx, cancel := context.WithTimeout(ctx, opts.StartTimeout)
	defer cancel()
	if err := b.waitReady(wctx); err != nil {
		tail := b.LogTail(40)
		_ = b.Stop()
		return nil, fmt.Errorf("rabbitmq node %s not ready after %s: %w\n--- server log tail ---\n%s",
			b.NodeName, time.Since(started).Round(time.Millisecond), err, tail)
	}
	b.log.Info("rabbitmq started", "node", b.NodeName, "stomp", b.STOMPAddr(),
		"web_stomp", b.WebSTOMPURL(), "mgmt", b.MgmtURL(), "took", time.Since(started).Round(time.Millisecond))
	return b, nil
}

func rabbitmqCredential() (*syscall.Credential, error) {
	u, err := user.Lookup(systemUser)
	if err != nil {
		return nil, err
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// environ isolates the node from the system installation: own config, own
// cookie (HOME), own epmd port, everything bound to loopback.
func (b *Broker) environ(ctlDistPort int) []string {
	loopbackDist := "-kernel inet_dist_use_interface {127,0,0,1}"
	path := os.Getenv("PATH")
	if path == "" {
		path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	}
	return []string{
		"PATH=" + path,
		"HOME=" + b.Dir,
		"LANG=C.UTF-8",
		"LC_ALL=C.UTF-8",
		"RABBITMQ_NODENAME=" + b.NodeName,
		"RABBITMQ_CONF_ENV_FILE=" + filepath.Join(b.Dir, "rabbitmq-env.conf"),
		"RABBITMQ_CONFIG_FILE=" + filepath.Join(b.Dir, "rabbitmq.conf"),
		"RABBITMQ_ADVANCED_CONFIG_FILE=" + filepath.Join(b.Dir, "advanced.config"),
		"RABBITMQ_ENABLED_PLUGINS_FILE=" + filepath.Join(b.Dir, "enabled_plugins"),
		"RABBITMQ_MNESIA_BASE=" + filepath.Join(b.Dir, "mnesia"),
		"RABBITMQ_LOG_BASE=" + filepath.Join(b.Dir, "log"),
		"RABBITMQ_PID_FILE=" + filepath.Join(b.Dir, "rabbit.pid"),
		"RABBITMQ_DIST_PORT=" + strconv.Itoa(b.DistPort),
		"RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS=" + loopbackDist,
		"RABBITMQ_CTL_ERL_ARGS=" + loopbackDist,
		"RABBITMQ_CTL_DIST_PORT_MIN=" + strconv.Itoa(ctlDistPort),
		"RABBITMQ_CTL_DIST_PORT_MAX=" + strconv.Itoa(ctlDistPort),
		"ERL_EPMD_ADDRESS=127.0.0.1",
		"ERL_EPMD_PORT=" + strconv.Itoa(b.EPMDPort),
	}
}

func (b *Broker) writeFiles(extra string) error {
	conf := fmt.Sprintf(`listeners.tcp.default = 127.0.0.1:%d
stomp.listeners.tcp.1 = 127.0.0.1:%d
web_stomp.tcp.ip = 127.0.0.1
web_stomp.tcp.port = %d
web_stomp.ws_path = %s
management.tcp.ip = 127.0.0.1
management.tcp.port = %d
default_user = %s
default_pass = %s
default_user_tags.administrator = true
default_permissions.configure = .*
default_permissions.read = .*
default_permissions.write = .*
collect_statistics_interval = 500
disk_free_limit.absolute = 10MB
log.console = false
log.file.level = info
`, b.AMQPPort, b.STOMPPort, b.WebSTOMPPort, WebSTOMPPath, b.MgmtPort, b.AdminUser, b.AdminPass)
	if extra != "" {
		conf += extra + "\n"
	}
	files := []struct {
		name string
		data string
		mode os.FileMode
	}{
		{"rabbitmq.conf", conf, 0o600},
		// Writing enabled_plugins is what `rabbitmq-plugins enable --offline`
		// does, minus 6 s of CLI start-up.
		{"enabled_plugins", "[rabbitmq_management,rabbitmq_stomp,rabbitmq_web_stomp].\n", 0o600},
		{"rabbitmq-env.conf", "", 0o600},
		// The management agent samples queue counters at the finest retention
		// granularity (5 s by default); 1 s keeps tests that poll GetQueue fast.
		{"advanced.config", advancedConfig, 0o600},
		{".erlang.cookie", strings.ToUpper(randomHex(10)), 0o400},
	}
	for _, d := range []string{"mnesia", "log"} {
		if err := os.Mkdir(filepath.Join(b.Dir, d), 0o700); err != nil {
			return err
		}
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(b.Dir, f.name), []byte(f.data), f.mode); err != nil {
			return err
		}
	}
	// The Debian scripts run as user rabbitmq; it must own everything.
	return filepath.Walk(b.Dir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, int(b.cred.Uid), int(b.cred.Gid))
	})
}

const advancedConfig = `[
 {rabbitmq_management_agent, [{sample_retention_policies,
   [{global, [{605, 1}, {3660, 60}]}, {basic, [{605, 1}]}, {detailed, [{10, 1}]}]}]},
 {rabbitmq_management, [{sample_retention_policies,
   [{global, [{605, 1}, {3660, 60}]}, {basic, [{605, 1}]}, {detailed, [{10, 1}]}]}]}
].
`

func (b *Broker) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Dir = b.Dir
	cmd.Env = b.env
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Credential: b.cred,
		Setpgid:    true,
		// If the test binary dies (e.g. -timeout panic) take the node down.
		Pdeathsig: syscall.SIGTERM,
	}
	return cmd
}

// startEPMD runs a private epmd in the foreground, on loopback and our own
// port, so we never touch (or leave behind) a system-wide one.
func (b *Broker) startEPMD(ctx context.Context) error {
	epmd, err := exec.LookPath("epmd")
	if err != nil {
		return err
	}
	cmd := b.command(epmd, "-port", strconv.Itoa(b.EPMDPort), "-address", "127.0.0.1")
	b.epmdExited = make(chan struct{})
	if err := b.startLogged(cmd, "epmd", "epmd.out", b.epmdExited); err != nil {
		return err
	}
	b.epmd = cmd
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return waitPort(wctx, b.EPMDPort)
}

func (b *Broker) startServer() error {
	cmd := b.command(serverScript)
	if err := b.startLogged(cmd, "rabbitmq-server", "server.out", b.exited); err != nil {
		return err
	}
	b.server = cmd
	return nil
}

func (b *Broker) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-b.exited:
			cancel()
		case <-ctx.Done():
		}
	}()
	for _, p := range []struct {
		name string
		port int
	}{{"amqp", b.AMQPPort}, {"stomp", b.STOMPPort}, {"web-stomp", b.WebSTOMPPort}, {"management", b.MgmtPort}} {
		if err := waitPort(ctx, p.port); err != nil {
			return b.readyErr(p.name, err)
		}
	}
	// The management listener opens before the admin user is guaranteed to
	// exist; wait for an authenticated answer.
	m := b.Mgmt()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, b.MgmtURL()+"/api/overview", nil)
		req.SetBasicAuth(m.User, m.Pass)
		resp, err := m.HTTP.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return b.readyErr("management auth", ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (b *Broker) readyErr(what string, err error) error {
	select {
	case <-b.exited:
		return fmt.Errorf("rabbitmq-server exited (%v) while waiting for %s", b.server.ProcessState, what)
	default:
		return fmt.Errorf("waiting for %s: %w", what, err)
	}
}

// LogTail returns the last n lines of the node log and of the server's
// stdout/stderr, for error messages.
func (b *Broker) LogTail(n int) string {
	var sb strings.Builder
	paths := []string{filepath.Join(b.Dir, "log", "server.out")}
	logs, _ := filepath.Glob(filepath.Join(b.Dir, "log", "*.log"))
	paths = append(paths, logs...)
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil || len(data) == 0 {
			continue
		}
		lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		if len(lines) > n {
			lines = lines[len(lines)-n:]
		}
		fmt.Fprintf(&sb, "==> %s <==\n%s\n", filepath.Base(p), strings.Join(lines, "\n"))
	}
	return sb.String()
}

// Stop shuts the node down (rabbitmqctl stop, then the process group is
// killed), stops the private epmd and removes the node directory. It is
// safe to call more than once.
func (b *Broker) Stop() error {
	b.stopOnce.Do(func() { b.stopErr = b.stop() })
	return b.stopErr
}

func (b *Broker) stop() error {
	var errs []error
	if b.server != nil {
		select {
		case <-b.exited:
		default:
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			ctl := b.command(ctlScript, "-n", b.NodeName, "stop")
			out, err := runWithContext(ctx, ctl)
			cancel()
			if err != nil {
				b.log.Warn("rabbitmqctl stop failed; killing the node", "err", err, "out", strings.TrimSpace(string(out)))
			}
		}
		killGroup(b.server, b.exited, 15*time.Second)
	}
	if b.epmd != nil {
		killGroup(b.epmd, b.epmdExited, 0)
	}
	if !b.keepDir {
		if err := os.RemoveAll(b.Dir); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func runWithContext(ctx context.Context, cmd *exec.Cmd) ([]byte, error) {
	var buf strings.Builder
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return []byte(buf.String()), err
	case <-ctx.Done():
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		waitErr := <-done
		return []byte(buf.String()), fmt.Errorf("%w (killed: %v)", ctx.Err(), waitErr)
	}
}

// killGroup waits up to grace for the process to exit, then sends SIGTERM
// and finally SIGKILL to its whole process group (beam, erl_child_setup,
// inet_gethost).
func killGroup(cmd *exec.Cmd, exited <-chan struct{}, grace time.Duration) {
	pgid := cmd.Process.Pid
	wait := func(d time.Duration) bool {
		select {
		case <-exited:
			return true
		case <-time.After(d):
			return false
		}
	}
	if !wait(grace) {
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		if !wait(10 * time.Second) {
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			wait(5 * time.Second)
		}
	}
	// Stragglers left in the group after the leader exited.
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
}

func waitPort(ctx context.Context, port int) error {
	d := net.Dialer{Timeout: time.Second}
	for {
		c, err := d.DialContext(ctx, "tcp", hostPort(port))
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("port %d: %w", port, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func randomHex(n int) string {
	buf := make([]byte, n)
	_, _ = rand.Read(buf)
	return hex.EncodeToString(buf)
}

// startLogged starts cmd (what, in errors) with its output appended to
// logFile in the broker's log directory, and closes exited when it ends.
func (b *Broker) startLogged(cmd *exec.Cmd, what, logFile string, exited chan struct{}) error {
	out, err := os.OpenFile(filepath.Join(b.Dir, "log", logFile), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer out.Close()
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", what, err)
	}
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	return nil
}

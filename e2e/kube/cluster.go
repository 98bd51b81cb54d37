package kube

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/sitebus/sitebus/e2e/harness"
	"github.com/sitebus/sitebus/e2e/testenv"
)

// Component names, for LogTail.
const (
	Etcd              = "etcd"
	APIServer         = "kube-apiserver"
	ControllerManager = "kube-controller-manager"
)

// Options tune Start. The zero value is fine.
type Options struct {
	// NoControllerManager starts only etcd and the API server. Then nothing
	// creates the "default" ServiceAccount (pod creation fails until a test
	// makes one), quota status is never computed and namespace deletion
	// hangs in Terminating.
	NoControllerManager bool
	// StartTimeout bounds the health wait of each component; default 60 s.
	StartTimeout time.Duration
	// APIServerArgs and ControllerManagerArgs are appended to the flags
	// Start passes (a repeated flag overrides the earlier one).
	APIServerArgs, ControllerManagerArgs []string
	// KeepDir leaves the cluster directory (etcd data, keys, certificates,
	// kubeconfig, and the components' output as <component>.log) behind
	// after Stop, for debugging.
	KeepDir bool
}

// Timings says how long each component took from start to healthy.
type Timings struct {
	Etcd, APIServer, ControllerManager, Total time.Duration
}

// Cluster is a running control plane; every listener is on 127.0.0.1.
type Cluster struct {
	Dir        string // temp dir with etcd data, keys, certificates, kubeconfig
	Server     string // API server URL, https://127.0.0.1:<port>
	Kubeconfig string // path of an admin kubeconfig (verifies TLS, token auth)
	CAFile     string // the API server's self-signed certificate bundle
	Token      string // bearer token of AdminName (system:masters)
	UserToken  string // bearer token of UserName (no permissions by default)
	EtcdURL    string // etcd client URL
	Timings    Timings

	opts       Options
	apiArgs    []string
	kcmArgs    []string
	kcmCAFile  string
	kcmHealthz string
	cfg        *rest.Config
	dyn        dynamic.Interface
	mapper     *restmapper.DeferredDiscoveryRESTMapper

	mu        sync.Mutex // guards the processes (the API server is restartable)
	etcd      *harness.Process
	apiserver *harness.Process
	kcm       *harness.Process

	stopOnce sync.Once
	stopErr  error
}

// Start boots etcd, kube-apiserver and (unless opts.NoControllerManager)
// kube-controller-manager, each waited for until healthy. The caller must
// Stop the cluster; on error everything started is already stopped.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	if err := available(!opts.NoControllerManager); err != nil {
		return nil, err
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = 60 * time.Second
	}
	etcdBinPath, err := etcdPath()
	if err != nil {
		return nil, err
	}
	ports, err := testenv.FreePorts(4)
	if err != nil {
		return nil, fmt.Errorf("reserve ports: %w", err)
	}
	dir, err := os.MkdirTemp("", "sitebus-kube-")
	if err != nil {
		return nil, err
	}
	c := &Cluster{
		Dir:        dir,
		Server:     loopbackURL("https", ports[2]),
		Kubeconfig: filepath.Join(dir, "kubeconfig"),
		CAFile:     filepath.Join(dir, "apiserver-certs", "apiserver.crt"),
		Token:      randomHex(16),
		UserToken:  randomHex(16),
		EtcdURL:    loopbackURL("http", ports[0]),
		opts:       opts,
		kcmCAFile:  filepath.Join(dir, "kcm-certs", "kube-controller-manager.crt"),
	}
	if err := c.prepare(ports); err != nil {
		_ = c.Stop()
		return nil, err
	}

	begin := time.Now()
	if err := c.startEtcd(ctx, etcdBinPath, ports[1]); err != nil {
		return nil, c.failStart(err)
	}
	c.Timings.Etcd = time.Since(begin)

	t0 := time.Now()
	if err := c.startAPIServer(ctx); err != nil {
		return nil, c.failStart(err)
	}
	c.Timings.APIServer = time.Since(t0)
	if err := c.buildClients(); err != nil {
		return nil, c.failStart(err)
	}

	if !opts.NoControllerManager {
		t0 = time.Now()
		if err := c.startControllerManager(ctx); err != nil {
			return nil, c.failStart(err)
		}
		c.Timings.ControllerManager = time.Since(t0)
	}
	c.Timings.Total = time.Since(begin)
	return c, nil
}

// prepare writes keys, tokens and kubeconfig and computes the command
// lines.
func (c *Cluster) prepare(ports []int) error {
	saKey := filepath.Join(c.Dir, "sa.key")
	saPub := filepath.Join(c.Dir, "sa.pub")
	tokens := filepath.Join(c.Dir, "tokens.csv")
	if err := writeServiceAccountKeys(saKey, saPub); err != nil {
		return err
	}
	if err := writeTokenFile(tokens, c.Token, c.UserToken); err != nil {
		return fmt.Errorf("write token file: %w", err)
	}
	if err := writeKubeconfig(c.Kubeconfig, c.Server, c.CAFile, AdminName, c.Token); err != nil {
		return fmt.Errorf("write kubeconfig: %w", err)
	}
	c.apiArgs = append(apiServerArgs(c, ports[2], saKey, saPub, tokens), c.opts.APIServerArgs...)
	c.kcmArgs = append(controllerManagerArgs(c, ports[3], saKey), c.opts.ControllerManagerArgs...)
	c.kcmHealthz = loopbackURL("https", ports[3]) + "/healthz"
	return nil
}

// buildClients makes the shared clients. client-go reads CAFile here, so
// it must wait until the API server has written its certificate.
func (c *Cluster) buildClients() error {
	c.cfg = c.restConfig(c.Token)
	dyn, err := dynamic.NewForConfig(c.cfg)
	if err != nil {
		return fmt.Errorf("dynamic client: %w", err)
	}
	disco, err := discovery.NewDiscoveryClientForConfig(c.cfg)
	if err != nil {
		return fmt.Errorf("discovery client: %w", err)
	}
	c.dyn = dyn
	c.mapper = restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disco))
	return nil
}

func (c *Cluster) restConfig(token string) *rest.Config {
	return &rest.Config{
		Host:            c.Server,
		BearerToken:     token,
		TLSClientConfig: rest.TLSClientConfig{CAFile: c.CAFile},
		// Tests create objects in bursts; the client-go default (5 QPS)
		// would make them slow for no reason.
		QPS:   100,
		Burst: 200,
	}
}

// RESTConfig returns a fresh copy of the admin client configuration.
func (c *Cluster) RESTConfig() *rest.Config { return rest.CopyConfig(c.cfg) }

// KubeconfigPath is Kubeconfig, for harness.KubeCluster.
func (c *Cluster) KubeconfigPath() string { return c.Kubeconfig }

// UserRESTConfig returns a client configuration for UserName, which RBAC
// allows nothing beyond discovery until a test binds a role to it.
func (c *Cluster) UserRESTConfig() *rest.Config { return c.restConfig(c.UserToken) }

// Dynamic is an admin dynamic client (shared; safe for concurrent use).
func (c *Cluster) Dynamic() dynamic.Interface { return c.dyn }

// LogTail returns the last n output lines of component (Etcd, APIServer or
// ControllerManager); after StartAPIServer, those of the new API server.
func (c *Cluster) LogTail(component string, n int) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var p *harness.Process
	switch component {
	case Etcd:
		p = c.etcd
	case APIServer:
		p = c.apiserver
	case ControllerManager:
		p = c.kcm
	default:
		return fmt.Sprintf("(unknown component %q)", component)
	}
	if p == nil {
		return "(not started)"
	}
	return p.Tail(n)
}

// failStart stops what was started and returns err with the output tails,
// which usually name the real cause.
func (c *Cluster) failStart(err error) error {
	var b strings.Builder
	b.WriteString(err.Error())
	for _, comp := range []string{Etcd, APIServer, ControllerManager} {
		if tail := c.LogTail(comp, 30); tail != "(not started)" {
			fmt.Fprintf(&b, "\n--- %s (tail) ---\n%s", comp, tail)
		}
	}
	if stopErr := c.Stop(); stopErr != nil {
		fmt.Fprintf(&b, "\n(stop: %v)", stopErr)
	}
	return errors.New(b.String())
}

// Stop stops every component (controller manager, API server, etcd, in
// that order) and removes Dir unless Options.KeepDir. It is idempotent.
func (c *Cluster) Stop() error {
	c.stopOnce.Do(func() {
		c.mu.Lock()
		procs := []*harness.Process{c.kcm, c.apiserver, c.etcd}
		c.mu.Unlock()
		var errs []error
		for _, p := range procs {
			if p != nil {
				errs = append(errs, stopProcess(p))
			}
		}
		if c.opts.KeepDir {
			// The output lives only in memory; keep it with the rest.
			for _, p := range procs {
				if p != nil {
					errs = append(errs, os.WriteFile(filepath.Join(c.Dir, p.Name+".log"), []byte(p.Output()), 0o644))
				}
			}
		} else if err := os.RemoveAll(c.Dir); err != nil {
			errs = append(errs, fmt.Errorf("remove %s: %w", c.Dir, err))
		}
		c.stopErr = errors.Join(errs...)
	})
	return c.stopErr
}

// stopGrace is how long a component may take to shut down on SIGTERM
// before it is killed.
const stopGrace = 15 * time.Second

// stopProcess terminates p. An exit status after SIGTERM is not an error:
// the components exit non-zero when told to stop.
func stopProcess(p *harness.Process) error {
	err := p.Stop(stopGrace)
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return nil
	}
	return err
}

package kube

import (
	"errors"

	"github.com/sitebus/sitebus/e2e/harness"
)

// PauseAPIServer freezes the API server (SIGSTOP): its port stays open and
// connections stay up, but nothing is answered, as with a server stalled
// on a long GC pause or a saturated node. ResumeAPIServer continues it.
// Do not call it on the Shared cluster.
func (c *Cluster) PauseAPIServer() error {
	p, err := c.apiServerProcess()
	if err != nil {
		return err
	}
	return p.Pause()
}

// ResumeAPIServer continues an API server PauseAPIServer froze.
func (c *Cluster) ResumeAPIServer() error {
	p, err := c.apiServerProcess()
	if err != nil {
		return err
	}
	return p.Resume()
}

func (c *Cluster) apiServerProcess() (*harness.Process, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.apiserver == nil {
		return nil, errors.New("kube-apiserver was never started")
	}
	return c.apiserver, nil
}

package rabbitmq

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Restart stops the node (rabbitmqctl stop, as an operator or a package
// upgrade would) and starts it again on the same ports, directory and
// data: durable queues and their persistent messages survive, every client
// connection is dropped. It waits until the listeners answer again.
func (b *Broker) Restart(ctx context.Context) error {
	if b.server == nil {
		return errors.New("rabbitmq: node was never started")
	}
	select {
	case <-b.exited:
	default:
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		out, err := runWithContext(sctx, b.command(ctlScript, "-n", b.NodeName, "stop"))
		cancel()
		if err != nil {
			b.log.Warn("rabbitmqctl stop failed; killing the node", "err", err, "out", strings.TrimSpace(string(out)))
		}
		killGroup(b.server, b.exited, 15*time.Second)
	}
	// startServer's goroutine closes b.exited when the node ends: only
	// once it has may the field take the new node's channel.
	<-b.exited
	b.exited = make(chan struct{})
	if err := b.startServer(); err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, defaultStartTimeout)
	defer cancel()
	if err := b.waitReady(wctx); err != nil {
		return fmt.Errorf("rabbitmq node %s not ready after restart: %w\n--- server log tail ---\n%s", b.NodeName, err, b.LogTail(40))
	}
	return nil
}

package simkit

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// Sim is a simulator as Main runs it.
type Sim interface {
	Start(addr string) error
	URL() string
	Close() error
}

// Build makes the simulator from the parsed flags. ctx ends at SIGINT or
// SIGTERM; attrs are logged with the listening URL (name no secret there).
type Build func(ctx context.Context, log *slog.Logger) (sim Sim, attrs []any, err error)

// Main is the whole of a simulator's command: flags -listen (default
// addr) and -v, the simulator's own flags that setup defines and whose
// Build it returns, then serving until SIGINT or SIGTERM. A failure is
// printed as "name: error" with exit status 1.
func Main(name, addr string, setup func(fs *flag.FlagSet) Build) {
	if err := run(name, addr, setup, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, name+":", err)
		os.Exit(1)
	}
}

func run(name, addr string, setup func(fs *flag.FlagSet) Build, args []string) error {
	fs := flag.NewFlagSet(name, flag.ExitOnError)
	listen := fs.String("listen", addr, "address to serve the API on (plain HTTP)")
	verbose := fs.Bool("v", false, "debug logging")
	build := setup(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	sim, attrs, err := build(ctx, log)
	if err != nil {
		return err
	}
	defer func() { _ = sim.Close() }()
	if err := sim.Start(*listen); err != nil {
		return err
	}
	log.Info(name+" listening", append([]any{"url", sim.URL(), "admin", sim.URL() + "/sim/"}, attrs...)...)
	<-ctx.Done()
	log.Info("shutting down")
	return nil
}

// Every calls f(1), f(2), ... once an interval until ctx ends: the demo
// loops that keep events flowing for someone watching a local run.
func Every(ctx context.Context, interval time.Duration, f func(n int)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for n := 1; ; n++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		f(n)
	}
}

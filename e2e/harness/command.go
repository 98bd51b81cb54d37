package harness

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
)

// SitebusFlag defines the -sitebus flag of the development commands (see
// SitebusBinaryOrBuild).
func SitebusFlag(p *string) {
	flag.StringVar(p, "sitebus", "", "sitebus binary (default: build it from this checkout)")
}

// RunCommand is the main of a development command: its logger on stderr
// (also slog's default), tagged with the command's name, and a context
// cancelled by Ctrl-C or SIGTERM for run. Signals stay caught until run
// has returned, so a second Ctrl-C does not cut the command's cleanup
// short. An error is printed as "name: error" with exit status 1.
func RunCommand(name string, run func(ctx context.Context, log *slog.Logger) error) {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil)).With("component", name)
	slog.SetDefault(log)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, log)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, name+":", err)
		os.Exit(1)
	}
}

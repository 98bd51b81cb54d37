package harness

import (
	"context"
	"flag"
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

// CommandContext starts a development command: its logger on stderr
// (also slog's default), tagged with the command's name, and a context
// cancelled by Ctrl-C or SIGTERM. Signals stay caught until stop is called,
// so a second Ctrl-C does not cut the command's cleanup short.
func CommandContext(name string) (ctx context.Context, stop context.CancelFunc, log *slog.Logger) {
	log = slog.New(slog.NewTextHandler(os.Stderr, nil)).With("component", name)
	slog.SetDefault(log)
	ctx, stop = signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	return ctx, stop, log
}

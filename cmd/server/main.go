package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/google/uuid"

	"github.com/queen-go/queen"
	"github.com/queen-go/queen/adapters/httpapi"
	"github.com/queen-go/queen/config"
)

func main() { os.Exit(run(os.Args[1:])) }

func run(args []string) int {
	for _, a := range args {
		switch a {
		case "-h", "-help", "--help", "help":
			fmt.Fprintln(os.Stdout, "queen-server: a partitioned message queue on PostgreSQL that speaks Queen MQ's HTTP API.")
			fmt.Fprintln(os.Stdout)
			config.Usage(os.Stdout)
			return 0
		case "-version", "--version":
			fmt.Fprintln(os.Stdout, "queen-server", queen.Version)
			return 0
		default:
			fmt.Fprintf(os.Stderr, "queen-server: unknown argument %q (configuration is by environment variables: see --help)\n", a)
			return 2
		}
	}
	cfg, err := config.Load()
	if err != nil {
		fmt.Fprintf(os.Stderr, "queen-server: invalid configuration:\n%v\n(see queen-server --help)\n", err)
		return 2
	}
	// Message and lease ids are UUIDv7 with 74 random bits: drawn from a pool refilled
	// 4 KiB at a time instead of one read of the system's source per id (about 0.5 µs
	// of a single-message push). They are identifiers, not secrets.
	uuid.EnableRandPool()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	app, cleanup, err := queen.InitializeApp(ctx, cfg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "queen-server: start: %v\n", err)
		return 1
	}
	defer cleanup()
	if err := app.Start(ctx); err != nil {
		app.Logger().Error("queen-server: start", "err", err)
		return 1
	}
	if cfg.PprofAddr != "" {
		stopProfiles, err := httpapi.ServeProfiles(cfg.PprofAddr)
		if err != nil {
			app.Logger().Error("queen-server: QUEEN_PPROF_ADDR", "err", err)
		} else {
			app.Logger().Warn("queen-server: profiles served (QUEEN_PPROF_ADDR)", "addr", cfg.PprofAddr)
			defer stopProfiles()
		}
	}
	var failed error
	select {
	case <-ctx.Done():
	case failed = <-app.Failed():
	}
	sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	if err := errors.Join(failed, app.Stop(sctx)); err != nil {
		app.Logger().Error("queen-server stopped", "err", err)
		return 1
	}
	app.Logger().Info("queen-server stopped")
	return 0
}

package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/queen-go/queen"
	"github.com/queen-go/queen/adapters/lambda"
	"github.com/queen-go/queen/config"
)

type dirList []string

func (d *dirList) String() string { return strings.Join(*d, ",") }
func (d *dirList) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*d = append(*d, s)
		}
	}
	return nil
}

func main() {
	os.Exit(run(os.Args[1:], os.Environ(), os.Stdout, os.Stderr))
}

func run(args, environ []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("queen-drain", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var dirs dirList
	fs.Var(&dirs, "dir", "spool directory to drain (repeatable, or comma-separated; default: QUEEN_DRAIN_DIRS, else FILE_BUFFER_DIR)")
	maxDur := fs.Duration("max-duration", 0, "stop after this long and leave the rest (0: until the spools are empty)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: queen-drain [--dir DIR ...] [--max-duration D]\n\nDrains spool directories into PostgreSQL (QUEEN_PG_URL or PG_*) and exits.\n\n")
		fs.PrintDefaults()
		fmt.Fprintf(stderr, "\nConfiguration variables (the broker's):\n\n")
		config.Usage(stderr)
	}
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	env := config.Environ(environ)
	cfg, err := config.Parse(env)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	if len(dirs) == 0 {
		_ = dirs.Set(strings.Join(cfg.DrainDirs, ",")) // trimmed, empty entries dropped
	}
	if len(dirs) == 0 {
		dirs = cfg.SpoolDirs()[:1]
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	job, cleanup, err := queen.InitializeDrain(ctx, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "queen-drain: %v\n", err)
		return 2
	}
	defer cleanup()
	job.Start()
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), cfg.StatementTimeout+5*time.Second)
		defer cancel()
		if err := job.Stop(sctx); err != nil {
			fmt.Fprintf(stderr, "queen-drain: %v\n", err)
		}
	}()
	if lambda.Running() {
		lambda.Serve(job, dirs, cfg.StatementTimeout)
		return 0
	}
	deadline := time.Now().Add(100 * 365 * 24 * time.Hour)
	if *maxDur > 0 {
		deadline = time.Now().Add(*maxDur)
	}
	sum, err := job.Run(ctx, dirs, deadline)
	b, _ := json.Marshal(sum)
	fmt.Fprintln(stdout, string(b))
	if err != nil {
		fmt.Fprintf(stderr, "queen-drain: %v\n", err)
		return 1
	}
	if sum.Remaining > 0 && !sum.Paused { // left under push maintenance on purpose: not a failure
		fmt.Fprintf(stderr, "queen-drain: %d records left after --max-duration\n", sum.Remaining)
		return 1
	}
	return 0
}

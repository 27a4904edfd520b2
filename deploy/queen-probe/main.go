package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"time"
)

func main() { os.Exit(run(os.Args[1:], os.Getenv, os.Stderr)) }

// run probes the URL given (or /ready on PORT) and returns the exit status.
func run(args []string, getenv func(string) string, stderr io.Writer) int {
	url, timeout, err := target(args, getenv)
	if err != nil {
		fmt.Fprintf(stderr, "queen-probe: %v\n", err)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := probe(ctx, url); err != nil {
		fmt.Fprintf(stderr, "queen-probe: %v\n", err)
		return 1
	}
	return 0
}

// target is the URL to probe and the time to wait: the only argument, else the broker's
// readiness route on loopback at PORT, which the broker listens on too.
func target(args []string, getenv func(string) string) (string, time.Duration, error) {
	timeout := 2 * time.Second
	if v := getenv("QUEEN_PROBE_TIMEOUT_MS"); v != "" {
		ms, err := strconv.Atoi(v)
		if err != nil || ms <= 0 {
			return "", 0, fmt.Errorf("QUEEN_PROBE_TIMEOUT_MS=%q: want a positive number of milliseconds", v)
		}
		timeout = time.Duration(ms) * time.Millisecond
	}
	switch len(args) {
	case 0:
	case 1:
		return args[0], timeout, nil
	default:
		return "", 0, fmt.Errorf("usage: queen-probe [URL] (default http://127.0.0.1:$PORT/ready)")
	}
	port := getenv("PORT")
	if port == "" {
		port = "6632" // the broker's default (config: PORT)
	}
	if n, err := strconv.Atoi(port); err != nil || n <= 0 || n > 65535 {
		return "", 0, fmt.Errorf("PORT=%q: want a port number", port)
	}
	return "http://127.0.0.1:" + port + "/ready", timeout, nil
}

// probe is one GET: nil on 200, an error naming the status or the failure otherwise.
func probe(ctx context.Context, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("GET %s: %w", url, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("GET %s: %w", url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512)) // the broker says why it is not ready
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s %s", url, resp.Status, body)
	}
	return nil
}

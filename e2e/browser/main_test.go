package browser

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/queen-go/queen/adapters/pglocal/pgtest"
)

// browserStartTimeout bounds Chromium's start (process, pipe, first tab); a cold start on
// the 2-core CI machine takes about a second.
const browserStartTimeout = 30 * time.Second

// chromium is the browser every test of the package opens its tabs in, started once by
// TestMain and stopped after the tests, before the leak check.
var chromium struct {
	ctx context.Context // the browser's first tab: openTab makes new browser contexts from it
	err error           // why there is no browser: each browser test fails (or skips) with it
}

// TestMain starts Chromium, runs the tests, stops Chromium, then stops the throwaway
// PostgreSQL cluster and fails the run when a goroutine is left behind (pgtest.Finish).
func TestMain(m *testing.M) {
	stop := startChromium()
	code := m.Run()
	stop()
	os.Exit(pgtest.Finish(code))
}

// startChromium starts the package's browser; stop ends it and waits until its process
// is gone and its profile directory removed.
func startChromium() (stop func()) {
	path, err := findChromium()
	if err != nil {
		chromium.err = err
		return func() {}
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox, // the tests may run as root, where Chromium's sandbox refuses to start
		chromedp.DisableGPU,
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.WindowSize(1280, 860),
	)
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(alloc)
	stop = func() { cancelCtx(); cancelAlloc() }
	// The first Do starts the browser and binds it to ctx, so ctx has no deadline: the
	// bound is a timer that cancels it.
	timer := time.AfterFunc(browserStartTimeout, cancelCtx)
	err = chromedp.Do(ctx)
	if !timer.Stop() {
		err = fmt.Errorf("not started within %v: %w", browserStartTimeout, err)
	}
	if err != nil {
		stop()
		chromium.err = fmt.Errorf("start Chromium (%s): %w", path, err)
		return func() {}
	}
	chromium.ctx = ctx
	return stop
}

// findChromium returns the path of the browser: Debian's chromium first, then the usual
// names on PATH.
func findChromium() (string, error) {
	for _, name := range []string{"/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", errors.New("no Chromium found (/usr/bin/chromium, or chromium, chromium-browser or " +
		"google-chrome on PATH): install it (apt-get install chromium), or set QUEEN_SKIP_BROWSER=1 " +
		"to skip the browser tests")
}

// needBrowser fails the test when there is no browser (skips it when
// QUEEN_SKIP_BROWSER=1).
func needBrowser(t *testing.T) {
	t.Helper()
	if chromium.err == nil {
		return
	}
	if os.Getenv("QUEEN_SKIP_BROWSER") == "1" {
		t.Skipf("QUEEN_SKIP_BROWSER=1: %v", chromium.err)
	}
	t.Fatal(chromium.err)
}

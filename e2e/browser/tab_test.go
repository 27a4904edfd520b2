package browser

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

const (
	// pageTimeout bounds one page's load and data swap, and each step on a page (a
	// click, a wait for an element); the fragments are small server-rendered tables.
	pageTimeout = 15 * time.Second
	// loaded is what a page shows when its script has swapped the data in.
	loaded = `#page[data-loaded="true"]`
)

// tab is one browser tab of a test, in a browser context of its own.
type tab struct {
	t   *testing.T
	ctx context.Context

	mu       sync.Mutex
	problems []string // console errors and uncaught exceptions, in order
}

// openTab opens a tab in a fresh browser context (its own storage). The console errors
// and uncaught exceptions of its pages fail the test at its end, after the tab is closed.
func openTab(t *testing.T) *tab {
	t.Helper()
	needBrowser(t)
	ctx, cancel := chromedp.NewContext(chromium.ctx, chromedp.WithNewBrowserContext())
	tb := &tab{t: t, ctx: ctx}
	if err := chromedp.Listen(ctx, tb.record); err != nil {
		cancel()
		t.Fatalf("open a tab: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		for _, p := range tb.takeProblems() {
			t.Errorf("browser: %s", p)
		}
	})
	return tb
}

// record keeps the console errors and uncaught exceptions. It runs on the loop that
// reads the tab's messages, so it only appends.
func (tb *tab) record(ev any) {
	var p string
	switch ev := ev.(type) {
	case *runtime.EventConsoleAPICalled:
		if ev.Type != runtime.ConsoleAPICalledTypeError {
			return
		}
		args := make([]string, len(ev.Args))
		for i, a := range ev.Args {
			args[i] = remoteText(a)
		}
		p = "console.error: " + strings.Join(args, " ")
	case *runtime.EventExceptionThrown:
		d := ev.ExceptionDetails
		p = fmt.Sprintf("uncaught exception at %s:%d:%d: %s", d.URL, d.LineNumber+1, d.ColumnNumber+1, d.Text)
		if d.Exception != nil {
			p += " " + remoteText(d.Exception)
		}
	default:
		return
	}
	tb.mu.Lock()
	tb.problems = append(tb.problems, p)
	tb.mu.Unlock()
}

// remoteText is a console argument as the console shows it: a primitive's value, an
// object's description.
func remoteText(o *runtime.RemoteObject) string {
	if o.Description != "" {
		return o.Description
	}
	if len(o.Value) > 0 {
		var s string
		if json.Unmarshal(o.Value, &s) == nil {
			return s
		}
		return string(o.Value)
	}
	return string(o.Type)
}

// takeProblems returns the problems recorded so far and forgets them.
func (tb *tab) takeProblems() []string {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	p := tb.problems
	tb.problems = nil
	return p
}

// do runs steps within pageTimeout, failing the test with what and the page's state.
func (tb *tab) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, pageTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		tb.t.Fatalf("%s: %v\n%s", what, err, tb.state())
	}
}

// visit loads url and waits until its data is in (#page[data-loaded="true"]).
func (tb *tab) visit(url string) {
	tb.t.Helper()
	tb.do("visit "+url, chromedp.Navigate(url), chromedp.WaitReady(chromedp.CSS(loaded)))
}

// click clicks the first element sel matches, once it is visible.
func (tb *tab) click(sel string) {
	tb.t.Helper()
	tb.do("click "+sel, chromedp.Click(chromedp.CSS(sel)))
}

// setValue sets the value of the first input sel matches.
func (tb *tab) setValue(sel, value string) {
	tb.t.Helper()
	tb.do("set "+sel, chromedp.SetValue(chromedp.CSS(sel), value))
}

// waitVisible waits until an element sel matches is visible.
func (tb *tab) waitVisible(sel string) {
	tb.t.Helper()
	tb.do("wait for "+sel, chromedp.WaitVisible(chromedp.CSS(sel)))
}

// count is the number of elements sel matches now.
func (tb *tab) count(sel string) int {
	tb.t.Helper()
	return eval[int](tb, fmt.Sprintf(`document.querySelectorAll(%s).length`, jsString(sel)))
}

// attr is the attribute name of the first element sel matches ("" when either is
// missing).
func (tb *tab) attr(sel, name string) string {
	tb.t.Helper()
	return eval[string](tb, fmt.Sprintf(`document.querySelector(%s)?.getAttribute(%s) ?? ""`, jsString(sel), jsString(name)))
}

// eval evaluates a JavaScript expression in the page (awaiting a promise) within
// pageTimeout and decodes its value.
func eval[T any](tb *tab, expr string) T {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, pageTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		tb.t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// state describes the page for a failure: its URL, #page's attributes, #flash, and the
// start of its body's text.
func (tb *tab) state() string {
	ctx, cancel := context.WithTimeout(tb.ctx, 5*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => {
		const p = document.querySelector("#page"), f = document.querySelector("#flash");
		return "page " + location.href +
			(p ? " #page data-page=" + p.dataset.page + " data-loaded=" + p.dataset.loaded : " (no #page)") +
			(f ? " #flash: " + f.textContent.trim() : "") +
			"\nbody: " + (document.body ? document.body.innerText.slice(0, 600) : "(none)");
	})()`))
	if err != nil {
		return "(page state unknown: " + err.Error() + ")"
	}
	return s
}

// screenshot writes a PNG of the viewport as name.png into the test's artifact
// directory and logs where.
func (tb *tab) screenshot(name string) string {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, pageTimeout)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		tb.t.Fatalf("screenshot %s: %v", name, err)
	}
	path := filepath.Join(artifactDir(tb.t), name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		tb.t.Fatalf("screenshot %s: %v", name, err)
	}
	tb.t.Logf("screenshot %s", path)
	return path
}

// artifactDir is where a test's screenshots go: $QUEEN_ARTIFACTS/<test name> when set
// (kept), else the test's artifact directory (kept with go test -artifacts, removed
// after the test otherwise).
func artifactDir(t *testing.T) string {
	t.Helper()
	root := os.Getenv("QUEEN_ARTIFACTS")
	if root == "" {
		return t.ArtifactDir()
	}
	dir := filepath.Join(root, unsafeName.ReplaceAllString(t.Name(), "_"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("artifact directory: %v", err)
	}
	return dir
}

// unsafeName matches the characters of a test name a directory name does without.
var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// act clicks the action button sel, confirms with #confirm-ok when the page asks, and
// waits until #flash reports an outcome; it returns that report.
func (tb *tab) act(sel string) string {
	tb.t.Helper()
	before := tb.flash()
	tb.click(sel)
	var flash string
	tb.until("#flash to report the outcome of "+sel, func() bool {
		if eval[bool](tb, `!!document.querySelector("#confirm")?.open`) {
			tb.click("#confirm-ok")
			return false
		}
		flash = tb.flash()
		return flash != "" && flash != before
	})
	tb.t.Logf("%s: #flash %q", sel, flash)
	return flash
}

// flash is the text of #flash ("" when there is none).
func (tb *tab) flash() string {
	tb.t.Helper()
	return eval[string](tb, `document.querySelector("#flash")?.textContent.trim() ?? ""`)
}

// until polls cond (which may use the page) within pageTimeout, failing the test with
// what and the page's state.
func (tb *tab) until(what string, cond func() bool) {
	tb.t.Helper()
	deadline := time.Now().Add(pageTimeout)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			tb.t.Fatalf("after %v: still waiting for %s\n%s", pageTimeout, what, tb.state())
		}
		<-tick.C
	}
}

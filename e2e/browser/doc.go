// Package browser holds the web dashboard's tests in a real browser: headless Chromium
// driven over the DevTools protocol (chromedp), against a broker started through its
// public constructor on a throwaway PostgreSQL database, as the e2e tests start it.
// They check what only a browser shows: that every page loads and renders its data
// without a console error or an uncaught exception, that the buttons of the pages do what
// they say (a dead letter replayed, a consumer group moved, a queue deleted only after
// its confirmation), and that a read-only token sees no destructive action and cannot
// take one by forging the request from the page. At scale (scale_test.go: 1,000 queues
// of 100 partitions and a queue of 2,000, one message each) every listing page loads
// within 10 s with its main thread busy less than 3 s, shows at most a page (50 rows) in
// each table, and its next-page links load the next rows.
//
// # The harness (main_test.go, tab_test.go, harness_test.go)
//
//   - TestMain starts one Chromium for the package (headless, no sandbox, no GPU; found
//     at /usr/bin/chromium or as chromium, chromium-browser or google-chrome on PATH) and
//     stops it before the leak check (pgtest.Finish). Without a Chromium every browser
//     test fails saying how to install one (apt-get install chromium), unless
//     QUEEN_SKIP_BROWSER=1, which skips them.
//   - openTab: a tab in a browser context of its own (its own sessionStorage, so a token
//     entered in one test is unknown to the others). Every console.error call and every
//     uncaught exception of its pages fails the test.
//   - tab.visit: loads a page and waits, within pageTimeout, until the page's script has
//     swapped its data in (#page[data-loaded="true"], the DOM contract of the dashboard).
//   - tab.screenshot: a PNG of the viewport, written under $QUEEN_ARTIFACTS/<test> when
//     that is set, else under the test's artifact directory (go test -artifacts keeps it).
//   - startBroker and the plain HTTP helpers (push, pop, ack, configure) set up what the
//     pages show and observe what their buttons did, through the JSON API only.
//   - eventually: the one bounded poll; the tests never sleep.
//
// # The import rule
//
// As e2e, these tests see the broker only through its public constructor and HTTP; they
// may also import chromedp and its protocol types (cdproto). The root package's
// dependency test enforces this.
package browser

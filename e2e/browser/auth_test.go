package browser

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// authSecret is the HS256 secret of the broker with JWT on (32 bytes or more).
const authSecret = "browser-tests-hs256-secret-well-over-32-bytes"

// jwt is a token of a user with role, valid for an hour: HS256 signed here from the
// standard library (RFC 7515/7519), as an identity provider would.
func jwt(t *testing.T, role string) string {
	t.Helper()
	now := time.Now()
	enc := func(v any) string { return base64.RawURLEncoding.EncodeToString([]byte(mustJSON(t, v))) }
	input := enc(map[string]any{"alg": "HS256", "typ": "JWT"}) + "." +
		enc(map[string]any{"sub": "browser-" + role, "role": role, "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()})
	mac := hmac.New(sha256.New, []byte(authSecret))
	mac.Write([]byte(input))
	return input + "." + base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// TestTokenRoles: with JWT on, the dashboard asks for a token; an admin's pages offer the
// destructive actions, a read-only token's pages offer none, and the read-only token
// cannot delete by forging the request from the page's origin either.
func TestTokenRoles(t *testing.T) {
	b := startBroker(t, map[string]string{"JWT_ENABLED": "true", "JWT_ALGORITHM": "HS256", "JWT_SECRET": authSecret})
	b.token = "Bearer " + jwt(t, "admin")
	const q = "guarded"
	b.configure(t, q, map[string]any{"retryLimit": 0})
	b.push(t, q, "p", map[string]any{"n": 1}, map[string]any{"n": 2})
	if p := b.pop(t, q, "", 1); p == nil {
		t.Fatal("nothing to pop")
	} else if a := b.ackAll(t, p, "failed"); !a[0].DLQ {
		t.Fatalf("the failed ack (retryLimit 0) did not dead-letter: %+v", a)
	}
	if p := b.pop(t, q, "g", 1); p == nil {
		t.Fatal("group g: nothing to pop")
	}

	destructive := `[data-action="delete"], [data-action="delete-queue"]`
	pages := []struct{ path, rows string }{
		{"/ui/queues/" + q, "#page"},
		{"/ui/groups", fmt.Sprintf(`tr[data-group="g"][data-queue=%q]`, q)},
		{"/ui/dlq", fmt.Sprintf(`tr[data-dlq-id][data-queue=%q]`, q)},
	}
	for _, c := range []struct {
		role        string
		destructive bool   // the pages offer delete actions
		scheme      string // typed before the token: pasted with its scheme, it still signs in
	}{
		{role: "admin", destructive: true, scheme: "Bearer "},
		{role: "read-only", destructive: false},
	} {
		t.Run(c.role, func(t *testing.T) {
			tb := openTab(t)
			token := jwt(t, c.role)
			tb.login(b.URL+"/", c.scheme+token)
			for _, p := range pages {
				tb.visit(b.URL + p.path)
				if tb.count(p.rows) == 0 {
					t.Errorf("%s as %s: nothing matches %s\n%s", p.path, c.role, p.rows, tb.state())
				}
				if n := tb.count(destructive); (n > 0) != c.destructive {
					t.Errorf("%s as %s: %d delete actions, want them offered: %v\n%s", p.path, c.role, n, c.destructive, tb.state())
				}
			}
			if c.destructive {
				return
			}
			tb.screenshot("read-only-dlq")
			forged := fmt.Sprintf(`fetch("/api/v1/resources/queues/%s", {method: "DELETE", headers: {Authorization: %s}}).then(r => r.status)`,
				q, jsString("Bearer "+token))
			if code := eval[int](tb, forged); code != http.StatusForbidden {
				t.Errorf("a DELETE of the queue with the read-only token from the page: status %d, want 403", code)
			}
			if code, raw := b.call(t, http.MethodGet, "/api/v1/resources/queues/"+q, ""); code != http.StatusOK {
				t.Errorf("after the forged delete: GET the queue: status %d, want 200: %s", code, raw)
			}
		})
	}
}

// login opens url, which must ask for a token (#login), enters the JWT token there and waits
// until the page has loaded its data with it.
func (tb *tab) login(url, token string) {
	tb.t.Helper()
	tb.do("open "+url+" and wait for the login form", chromedp.Navigate(url), chromedp.WaitVisible(chromedp.CSS(`#login`)))
	if got := tb.attr(`label[for="token"]`, "for"); got != "token" {
		tb.t.Errorf("the login form has no label for #token\n%s", tb.state())
	}
	if typ := tb.attr(`#token`, "type"); typ != "password" {
		tb.t.Errorf("#token is type=%q, want password", typ)
	}
	tb.screenshot("login")
	tb.do("enter the token", chromedp.SendKeys(chromedp.CSS(`#token`), token))
	tb.click(`#login button[type="submit"], #login input[type="submit"], #login button:not([type])`)
	tb.do("wait for the data after the login", chromedp.WaitReady(chromedp.CSS(loaded)))
	if stored := eval[string](tb, `sessionStorage.getItem("queen.token") ?? ""`); stored == "" {
		tb.t.Errorf("after the login sessionStorage has no queen.token")
	}
	if kept := eval[int](tb, `localStorage.length`); kept != 0 {
		tb.t.Errorf("after the login localStorage holds %d items, want the token in sessionStorage only", kept)
	}
}

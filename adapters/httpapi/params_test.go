package httpapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/mux"
)

// TestCheckParams: the middleware refuses a path or query value PostgreSQL cannot hold
// (NUL, invalid UTF-8) and a name-typed one that breaks the naming rule, with a 400 that
// names the parameter, before the handler runs; it lets everything else through, on
// routers that match the decoded path and on those that match it as sent.
func TestCheckParams(t *testing.T) {
	t.Parallel()
	a := newAPI(Services{}, Options{})
	reached := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	decoded := mux.NewRouter()
	decoded.Use(a.checkParams(false))
	decoded.Handle("/d/{queue:.+}/lease/{leaseId}/{transactionId}", reached)
	escaped := mux.NewRouter().UseEncodedPath()
	escaped.Use(a.checkParams(true))
	escaped.Handle("/e/{group}/{partition}", reached)
	tests := []struct {
		name string
		h    http.Handler
		path string
		want []string // nil: reaches the handler
	}{
		{"plain", decoded, "/d/orders/lease/l/t?namespace=billing&status=pending", nil},
		{"slash and unicode in a name", decoded, "/d/a%2F%C3%A9/lease/l/t", nil},
		{"control character in free text", decoded, "/d/q/lease/l/t%01?status=%0A", nil},
		{"lease id is the route's own", decoded, "/d/q/lease/a%00/t", nil},
		{"unknown query parameter", decoded, "/d/q/lease/l/t?extra=%01", nil},
		{"empty name filter", decoded, "/d/q/lease/l/t?namespace=", nil},
		{"NUL in a path name", decoded, "/d/a%00/lease/l/t", []string{"path parameter queue", "control character"}},
		{"NUL in path free text", decoded, "/d/q/lease/l/t%00", []string{"path parameter transactionId", "NUL"}},
		{"invalid UTF-8 in path free text", decoded, "/d/q/lease/l/t%FF", []string{"path parameter transactionId", "UTF-8"}},
		{"NUL in a query name", decoded, "/d/q/lease/l/t?namespace=a%00", []string{"query parameter namespace", "control character"}},
		{"long query name", decoded, "/d/q/lease/l/t?task=" + strings.Repeat("t", 256), []string{"query parameter task", "256", "255"}},
		{"NUL in query free text", decoded, "/d/q/lease/l/t?status=a%00", []string{"query parameter status", "NUL"}},
		{"NUL in a repeated value", decoded, "/d/q/lease/l/t?queue=ok&queue=a%00", []string{"query parameter queue"}},
		{"NUL in an unknown parameter", decoded, "/d/q/lease/l/t?extra=a%00", []string{"query parameter extra", "NUL"}},
		{"NUL in a parameter's name", decoded, "/d/q/lease/l/t?a%00=1", []string{"query parameter name a%00", "NUL"}},
		{"escaped: plain", escaped, "/e/readers/eu%2Fwest", nil},
		{"escaped: NUL in a name", escaped, "/e/readers/p%00", []string{"path parameter partition", "control character"}},
		{"escaped: invalid UTF-8 in a name", escaped, "/e/g%FF/p", []string{"path parameter group", "UTF-8"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rec := httptest.NewRecorder()
			tt.h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, tt.path, nil))
			if tt.want == nil {
				if rec.Code != http.StatusNoContent {
					t.Fatalf("status %d %s, want the handler's 204", rec.Code, rec.Body)
				}
				return
			}
			var body struct{ Error string }
			if rec.Code != http.StatusBadRequest || json.Unmarshal(rec.Body.Bytes(), &body) != nil {
				t.Fatalf("status %d %s, want a JSON 400", rec.Code, rec.Body)
			}
			for _, w := range tt.want {
				if !strings.Contains(body.Error, w) {
					t.Errorf("error %q does not contain %q", body.Error, w)
				}
			}
		})
	}
}

// TestCheckTime: a timestamp is taken once in UTC between the first instant of year 1
// and the last of year 9999; year 0 and year 10000 are refused naming the parameter and
// the range.
func TestCheckTime(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in string
		ok bool
	}{
		{"2026-05-01T10:00:00Z", true},
		{"0001-01-01T00:00:00Z", true},
		{"9999-12-31T23:59:59.999999999Z", true},
		{"0001-01-01T01:00:00+01:00", true},
		{"0000-01-01T00:00:00Z", false},
		{"0000-12-31T23:59:59.999999999Z", false},
		{"0001-01-01T00:30:00+01:00", false}, // 0000-12-31T23:30:00Z
		{"9999-12-31T23:59:59-14:00", false}, // 10000-01-01T13:59:59Z
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			at, err := time.Parse(time.RFC3339Nano, tt.in)
			if err != nil {
				t.Fatal(err)
			}
			err = checkTime("query parameter", "from", at)
			if (err == nil) != tt.ok {
				t.Fatalf("checkTime(%s) = %v, want ok=%v", tt.in, err, tt.ok)
			}
			if err == nil {
				return
			}
			if statusOf(err) != http.StatusBadRequest {
				t.Fatalf("status %d, want 400", statusOf(err))
			}
			for _, w := range []string{"query parameter from", "0001-01-01T00:00:00Z", "9999-12-31T23:59:59Z"} {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

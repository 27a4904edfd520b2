package brokertest

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/queen-go/queen/adapters/pglocal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func TestStartRefusesABadConfiguration(t *testing.T) {
	if _, err := Start(map[string]string{"PORT": "not a port"}, nil, time.Minute); err == nil ||
		!strings.Contains(err.Error(), "PORT") {
		t.Fatalf("Start with PORT=not a port: %v, want a configuration error naming PORT", err)
	}
}

// A started broker answers on its URL; Stop stops it, and a second Stop gives the first's
// answer.
func TestStartServesAndStopsOnce(t *testing.T) {
	b, err := Start(map[string]string{"QUEEN_PG_URL": pgtest.NewDatabase(t), "PORT": "0", "QUEEN_BIND_ADDR": "127.0.0.1",
		"LOG_LEVEL": "warn", "FILE_BUFFER_DIR": filepath.Join(t.TempDir(), "spool")}, nil, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(b.URL + "/live")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /live: %d", resp.StatusCode)
	}
	http.DefaultClient.CloseIdleConnections()
	if err := b.Stop(time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := b.Stop(time.Minute); err != nil {
		t.Fatalf("second Stop: %v, want the first's nil", err)
	}
	if _, err := http.Get(b.URL + "/live"); err == nil {
		t.Fatal("the broker still answers after Stop")
	}
}

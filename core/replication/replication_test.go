package replication

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/queen-go/queen/internal/syncbuf"
	"github.com/queen-go/queen/ports"
)

func TestJudge(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name                 string
		setup                ports.ReplicationSetup
		durable, sync, known bool
		says                 string
	}{
		{"a lone primary", ports.ReplicationSetup{SynchronousCommit: "on"}, false, false, true, "no standby"},
		{"asynchronous standbys", ports.ReplicationSetup{SynchronousCommit: "on", Standbys: 2}, false, false, true,
			"2 asynchronous standby(s)"},
		{"synchronous_commit local", ports.ReplicationSetup{SynchronousCommit: "local", SynchronousStandbyNames: "*",
			Standbys: 1, SyncStandbys: 1}, false, false, true, "synchronous_commit=local"},
		{"synchronous_commit off", ports.ReplicationSetup{SynchronousCommit: "off"}, false, false, true, "synchronous_commit=off"},
		{"a synchronous standby", ports.ReplicationSetup{SynchronousCommit: "on", SynchronousStandbyNames: "*",
			Standbys: 2, SyncStandbys: 1}, true, true, true, "1 synchronous standby(s) of 2"},
		{"remote_write", ports.ReplicationSetup{SynchronousCommit: "remote_write", SynchronousStandbyNames: "s1",
			Standbys: 1, SyncStandbys: 1}, true, true, true, "remote_write: not a crash of that standby"},
		{"synchronous names, none attached", ports.ReplicationSetup{SynchronousCommit: "on", SynchronousStandbyNames: "s1"},
			true, false, true, "commits wait until one attaches"},
		{"standbys hidden from the role", ports.ReplicationSetup{SynchronousCommit: "on", SynchronousStandbyNames: "s1",
			Standbys: 1, Hidden: 1}, false, false, false, "pg_read_all_stats"},
		{"a standby", ports.ReplicationSetup{SynchronousCommit: "on", InRecovery: true}, false, false, true, "in recovery"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v := Judge(tt.setup)
			if v.Durable != tt.durable || v.Sync != tt.sync || v.Known != tt.known {
				t.Errorf("durable %v sync %v known %v, want %v %v %v", v.Durable, v.Sync, v.Known, tt.durable, tt.sync, tt.known)
			}
			if !strings.Contains(v.Why, tt.says) {
				t.Errorf("why %q does not say %q", v.Why, tt.says)
			}
		})
	}
}

type reader struct {
	s   ports.ReplicationSetup
	err error
}

func (r reader) ReplicationSetup(context.Context) (ports.ReplicationSetup, error) { return r.s, r.err }

func TestSync(t *testing.T) {
	t.Parallel()
	sync, err := New(reader{s: ports.ReplicationSetup{SynchronousCommit: "on", SynchronousStandbyNames: "*",
		Standbys: 1, SyncStandbys: 1}}, Options{}).Sync(context.Background())
	if err != nil || !sync {
		t.Fatalf("sync %v, %v; want true", sync, err)
	}
	if _, err := New(reader{err: errors.New("down")}, Options{}).Sync(context.Background()); err == nil {
		t.Fatal("an unreadable set-up gave no error")
	}
}

func TestReportLogsOneLine(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		r     reader
		level string
		says  string
	}{
		{"durable: info", reader{s: ports.ReplicationSetup{SynchronousCommit: "on", SynchronousStandbyNames: "*",
			Standbys: 1, SyncStandbys: 1}}, "INFO", "survives_failover=true"},
		{"not durable: a warning", reader{s: ports.ReplicationSetup{SynchronousCommit: "on"}}, "WARN", "survives_failover=false"},
		{"unreadable: a warning", reader{err: errors.New("connection refused")}, "WARN", "unknown"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var buf bytes.Buffer
			New(tt.r, Options{}).Report(context.Background(), time.Second, slog.New(slog.NewTextHandler(&buf, nil)))
			lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
			if len(lines) != 1 || !strings.Contains(lines[0], "level="+tt.level) || !strings.Contains(lines[0], tt.says) {
				t.Fatalf("logged %q, want one %s line saying %q", buf.String(), tt.level, tt.says)
			}
		})
	}
}

// flipping is a reader whose answer a test changes.
type flipping struct {
	mu sync.Mutex
	s  ports.ReplicationSetup
}

func (f *flipping) set(s ports.ReplicationSetup) { f.mu.Lock(); f.s = s; f.mu.Unlock() }

func (f *flipping) ReplicationSetup(context.Context) (ports.ReplicationSetup, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.s, nil
}

// With Require, pushes are held from New until a reading finds a synchronous standby,
// held again when it goes, released when it comes back; each change is logged once.
func TestRequireHoldsPushesWhileNoSynchronousStandby(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lone := ports.ReplicationSetup{SynchronousCommit: "on"}
		synced := ports.ReplicationSetup{SynchronousCommit: "on", SynchronousStandbyNames: "*", Standbys: 1, SyncStandbys: 1}
		r := &flipping{s: lone}
		var buf syncbuf.Buffer
		c := New(r, Options{Require: true, Every: time.Second, Logger: slog.New(slog.NewTextHandler(&buf, nil))})
		if !c.Held() {
			t.Fatal("not held before the first reading")
		}
		c.Start(context.Background())
		defer c.Stop()
		if !c.Held() || !strings.Contains(c.HeldReason(), "no standby") {
			t.Fatalf("held %v (%q) with no standby, want held saying so", c.Held(), c.HeldReason())
		}
		r.set(synced)
		time.Sleep(time.Second + time.Millisecond)
		synctest.Wait()
		if c.Held() || c.HeldReason() != "" {
			t.Fatalf("held %v (%q) with a synchronous standby", c.Held(), c.HeldReason())
		}
		r.set(lone)
		time.Sleep(time.Second)
		synctest.Wait()
		time.Sleep(time.Second) // a second reading of the same state logs nothing more
		synctest.Wait()
		if !c.Held() {
			t.Fatal("not held once the standby left")
		}
		if n := strings.Count(buf.String(), "no synchronous standby attached"); n != 2 {
			t.Fatalf("the hold was logged %d times, want 2:\n%s", n, buf.String())
		}
		if n := strings.Count(buf.String(), "is attached"); n != 1 {
			t.Fatalf("the release was logged %d times, want 1:\n%s", n, buf.String())
		}
	})
}

func TestWithoutRequireNothingIsHeld(t *testing.T) {
	t.Parallel()
	c := New(reader{s: ports.ReplicationSetup{SynchronousCommit: "off"}}, Options{})
	c.Start(context.Background())
	defer c.Stop()
	if c.Held() {
		t.Fatal("held without Require")
	}
}

package readiness

import (
	"context"
	"errors"
	"testing"
	"time"
)

type pinger struct{ err error }

func (p pinger) Ping(context.Context) error { return p.err }

func TestReady(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_700_000_000, 0)
	down := errors.New("connection refused")
	tests := []struct {
		name     string
		db       error
		spool    bool
		failedAt time.Time
		stopping bool
		held     string
		want     Report
	}{
		{name: "database up", want: Report{Ready: true, Database: true}},
		{name: "database up, spool failing", db: nil, spool: true, failedAt: now.Add(-time.Second),
			want: Report{Ready: true, Database: true, HasSpool: true, SpoolFailing: true}},
		{name: "database down, no spool", db: down, want: Report{}},
		{name: "database down, spool takes the pushes", db: down, spool: true,
			want: Report{Ready: true, HasSpool: true}},
		{name: "database down, spool write failed just now", db: down, spool: true, failedAt: now.Add(-time.Second),
			want: Report{HasSpool: true, SpoolFailing: true}},
		{name: "database down, spool failure older than the grace", db: down, spool: true, failedAt: now.Add(-11 * time.Second),
			want: Report{Ready: true, HasSpool: true}},
		{name: "shutting down", stopping: true, spool: true, want: Report{Stopping: true, HasSpool: true}},
		{name: "pushes held out of the database: ready, saying why", spool: true, held: "no synchronous standby",
			want: Report{Ready: true, Database: true, HasSpool: true, Held: "no synchronous standby"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var failedAt func() time.Time
			if tc.spool {
				failedAt = func() time.Time { return tc.failedAt }
			}
			c := New(pinger{tc.db}, failedAt, Options{Now: func() time.Time { return now }, Held: func() string { return tc.held }})
			if tc.stopping {
				c.Stopping()
			}
			if got := c.Ready(context.Background()); got != tc.want {
				t.Errorf("Ready = %+v, want %+v", got, tc.want)
			}
		})
	}
}

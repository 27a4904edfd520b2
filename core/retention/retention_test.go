package retention

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/queen-go/queen/ports"
)

// fakeStore is a ports.RetentionStore over numbered partitions "p00".."pNN", each with
// a number of expired rows; it records the calls.
type fakeStore struct {
	mu       sync.Mutex
	rows     []int // expired rows per partition
	dead     int   // expired dead letters
	leader   bool  // another broker leads
	trimErr  error
	calls    []string
	cleanups int
	recorded []ports.RetentionRun
}

func (f *fakeStore) Lead(ctx context.Context, fn func(context.Context) error) (bool, error) {
	f.mu.Lock()
	other := f.leader
	f.mu.Unlock()
	if other {
		return false, nil
	}
	return true, fn(ctx)
}

func (f *fakeStore) Trim(_ context.Context, after string, partitions, rows int) (ports.TrimStep, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, fmt.Sprintf("trim %q %d %d", after, partitions, rows))
	if f.trimErr != nil {
		return ports.TrimStep{}, f.trimErr
	}
	// As log_retention_step_v1: the walk first (Walked), then the rows in order until
	// the budget runs out; a partition cut short is not done (Last stays before it).
	st := ports.TrimStep{Last: after}
	var ids []int
	for i := range f.rows {
		if id := fmt.Sprintf("p%02d", i); id > after && len(ids) < partitions {
			ids = append(ids, i)
		}
	}
	st.Walked = len(ids)
	for _, i := range ids {
		n := min(f.rows[i], rows-int(st.Segments))
		f.rows[i] -= n
		st.Segments += int64(n)
		st.Messages += int64(n)
		if f.rows[i] > 0 {
			return st, nil
		}
		st.Last = fmt.Sprintf("p%02d", i)
	}
	return st, nil
}

func (f *fakeStore) PurgeDeadLetters(_ context.Context, rows int) (ports.Removed, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := min(f.dead, rows)
	f.dead -= n
	return ports.Removed{Rows: int64(n), Bytes: int64(10 * n)}, nil
}

func (f *fakeStore) PurgeTraces(context.Context, int) (ports.Removed, error) {
	return ports.Removed{}, nil
}

func (f *fakeStore) DropEmptyPartitions(_ context.Context, idle time.Duration, _ int) (ports.Removed, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cleanups++
	return ports.Removed{Rows: 1}, nil
}

func (f *fakeStore) PurgeHistory(context.Context, time.Time, int) (ports.Removed, error) {
	return ports.Removed{}, nil
}

func (f *fakeStore) RecordRuns(_ context.Context, _ time.Time, runs []ports.RetentionRun) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.recorded = append(f.recorded, runs...)
	return nil
}

func TestCycle(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		rows      []int
		batch     int
		dueCap    int
		parallel  int
		cycles    int
		wantLeft  []int
		wantCalls []string
	}{
		{
			name: "a walk in one cycle", rows: []int{1, 0, 2}, batch: 10, dueCap: 50, cycles: 1,
			wantLeft: []int{0, 0, 0}, wantCalls: []string{`trim "" 50 10`},
		},
		{
			name: "the row cap ends a cycle, the next resumes at the partition cut short",
			rows: []int{3, 7, 1}, batch: 2, dueCap: 4, cycles: 2,
			wantLeft: []int{0, 3, 1},
			wantCalls: []string{
				// Cycle 1: p00 cut short at 2 rows (3 walked), then done (4 walked: the cap).
				`trim "" 4 2`, `trim "" 1 2`,
				// Cycle 2: p01 cut short twice (4 rows: the cap).
				`trim "p00" 4 2`, `trim "p00" 2 2`,
			},
		},
		{
			name: "the partition cap ends a cycle", rows: []int{0, 0, 0, 0, 1}, batch: 10, dueCap: 2, cycles: 2,
			wantLeft:  []int{0, 0, 0, 0, 1},
			wantCalls: []string{`trim "" 2 2`, `trim "p01" 2 2`}, // rows: at most the cap
		},
		{
			name: "the end of the walk starts the next cycle over", rows: []int{0, 1}, batch: 10, dueCap: 5, cycles: 2,
			wantLeft:  []int{0, 0},
			wantCalls: []string{`trim "" 5 5`, `trim "" 5 5`},
		},
		{
			name: "no cap: five steps' worth", rows: []int{1}, batch: 10, cycles: 1,
			wantLeft: []int{0}, wantCalls: []string{`trim "" 50 10`},
		},
		{
			name: "no cap: five steps' worth times the parallelism", rows: []int{1}, batch: 10, parallel: 3, cycles: 1,
			wantLeft: []int{0}, wantCalls: []string{`trim "" 150 10`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := &fakeStore{rows: tt.rows}
			j := New(f, Options{BatchSize: tt.batch, DueCap: tt.dueCap, Parallelism: tt.parallel})
			for range tt.cycles {
				if err := j.RunCycle(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
			if fmt.Sprint(f.rows) != fmt.Sprint(tt.wantLeft) {
				t.Errorf("rows left %v, want %v", f.rows, tt.wantLeft)
			}
			if fmt.Sprint(f.calls) != fmt.Sprint(tt.wantCalls) {
				t.Errorf("calls\n %q\nwant\n %q", f.calls, tt.wantCalls)
			}
		})
	}
}

func TestCycleCounts(t *testing.T) {
	t.Parallel()
	f := &fakeStore{rows: []int{5}, dead: 25}
	now := time.Unix(1000, 0)
	j := New(f, Options{BatchSize: 10, DueCap: 20, CleanupIdle: time.Hour, CleanupEvery: time.Minute,
		Now: func() time.Time { return now }})
	for range 2 {
		if err := j.RunCycle(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	now = now.Add(time.Minute)
	if err := j.RunCycle(context.Background()); err != nil {
		t.Fatal(err)
	}
	s := j.Stats()
	// Dead letters: 20 (the cap) in the first cycle, 5 in the second.
	if s.Cycles != 3 || s.Segments != 5 || s.DeadLetters != 25 || s.DeadLetterBytes != 250 || s.Partitions != 2 {
		t.Fatalf("stats %+v", s)
	}
	if f.cleanups != 2 { // first cycle and a minute later, not in between
		t.Fatalf("%d cleanups, want 2", f.cleanups)
	}
	// A store that places no removal in a queue: recorded under the job alone, one run
	// per job and cycle.
	sums := make(map[string]int64)
	for _, r := range f.recorded {
		if r.Tenant != "" || r.Queue != "" {
			t.Fatalf("run %+v names a queue", r)
		}
		sums[r.Job] += r.Rows
	}
	if len(f.recorded) != 4 || sums[ports.JobDeadLetters] != 25 || sums[ports.JobPartitions] != 2 {
		t.Fatalf("runs recorded %+v", f.recorded)
	}
}

func TestCycleLeadAndErrors(t *testing.T) {
	t.Parallel()
	f := &fakeStore{rows: []int{1}, leader: true}
	j := New(f, Options{})
	if err := j.RunCycle(context.Background()); err != nil || j.Stats().Skipped != 1 || len(f.calls) != 0 {
		t.Fatalf("with another leader: %v, %+v, calls %v", err, j.Stats(), f.calls)
	}
	f.leader, f.trimErr, f.dead = false, errors.New("boom"), 3
	err := j.RunCycle(context.Background())
	if err == nil || !errors.Is(err, f.trimErr) || j.Stats().Errors != 1 {
		t.Fatalf("trim failure: %v, %+v", err, j.Stats())
	}
	// The other jobs still ran.
	if j.Stats().DeadLetters != 3 {
		t.Fatalf("dead letters after a failed trim: %+v", j.Stats())
	}
}

// TestStartStop: in a bubble (fake time), the job runs no cycle before its interval,
// one when it elapses, and stops (twice: idempotent).
func TestStartStop(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		f := &fakeStore{rows: []int{3}}
		j := New(f, Options{Interval: time.Minute})
		j.Start()
		synctest.Wait()
		if st := j.Stats(); st.Segments != 0 {
			t.Fatalf("a cycle ran before the interval: %+v", st)
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		if st := j.Stats(); st.Segments != 3 {
			t.Fatalf("after one interval: %+v, want the 3 expired rows trimmed", st)
		}
		j.Stop()
		j.Stop() // idempotent
	})
}

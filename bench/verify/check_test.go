package verify

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckAnomalies(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		produced map[string]Produced
		log      string
		ackErrs  int64
		want     Counts
		pass     bool
	}{
		{
			name:     "clean run",
			produced: map[string]Produced{"a": {Max: 2}, "b": {Max: 1}},
			log:      "a 0\nb 0\na 1\nb 1\na 2\n",
			want:     Counts{Msgs: 5, Unique: 5},
			pass:     true,
		},
		{
			name:     "clean run from a non-zero base",
			produced: map[string]Produced{"a": {Base: 10, Max: 12}},
			log:      "a 10\na 11\na 12\n",
			want:     Counts{Msgs: 3, Unique: 3},
			pass:     true,
		},
		{
			name:     "duplicate is counted, is no order violation, passes",
			produced: map[string]Produced{"a": {Max: 2}},
			log:      "a 0\na 1\na 0\na 2\n",
			want:     Counts{Msgs: 4, Unique: 3, Dups: 1},
			pass:     true,
		},
		{
			name:     "gap below the frontier fails",
			produced: map[string]Produced{"a": {Max: 2}},
			log:      "a 0\na 2\n",
			want:     Counts{Msgs: 2, Unique: 2, Gaps: 1},
		},
		{
			name:     "out-of-order first occurrence without ack failures fails",
			produced: map[string]Produced{"a": {Max: 2}},
			log:      "a 1\na 0\na 2\n",
			want:     Counts{Msgs: 3, Unique: 3, Violations: 1},
		},
		{
			name:     "out-of-order first occurrence with ack failures passes, still counted",
			produced: map[string]Produced{"a": {Max: 2}},
			log:      "a 1\na 0\na 2\n",
			ackErrs:  3,
			want:     Counts{Msgs: 3, Unique: 3, Violations: 1},
			pass:     true,
		},
		{
			name:     "duplicate after a higher sequence plus a real reordering",
			produced: map[string]Produced{"a": {Max: 2}},
			log:      "a 0\na 2\na 2\na 0\na 1\n",
			want:     Counts{Msgs: 5, Unique: 3, Dups: 2, Violations: 1},
		},
		{
			// "hi" has a base above everything it received: its gap term is
			// 4-100+1-0 = -95. Unclamped it would cancel g's real gap of 1.
			name:     "negative gap term does not cancel another entity's gap",
			produced: map[string]Produced{"hi": {Base: 100, Max: 104}, "g": {Max: 3}},
			log:      "hi 0\nhi 1\nhi 2\nhi 3\nhi 4\ng 0\ng 1\ng 3\n",
			want:     Counts{Msgs: 8, Unique: 8, Gaps: 1, InFlight: 5, Unproduced: 5},
		},
		{
			name:     "in-flight tails are reported and pass",
			produced: map[string]Produced{"a": {Max: 9}, "b": {Max: 5}},
			log:      "a 0\nb 0\na 1\nb 1\na 2\nb 2\na 3\nb 3\na 4\nb 4\na 5\nb 5\na 6\n",
			want:     Counts{Msgs: 13, Unique: 13, InFlight: 3},
			pass:     true,
		},
		{
			name:     "entity never seen is entirely in flight",
			produced: map[string]Produced{"a": {Max: 1}, "never": {Base: 5, Max: 7}},
			log:      "a 0\na 1\n",
			want:     Counts{Msgs: 2, Unique: 2, InFlight: 3},
			pass:     true,
		},
		{
			name:     "empty log: everything in flight",
			produced: map[string]Produced{"a": {Max: 1}, "b": {Max: 0}},
			log:      "",
			want:     Counts{InFlight: 3},
			pass:     true,
		},
		{
			name:     "entity with nothing produced",
			produced: map[string]Produced{"a": {Max: 0}, "none": {Base: 0, Max: -1}},
			log:      "a 0\n",
			want:     Counts{Msgs: 1, Unique: 1},
			pass:     true,
		},
		{
			name:     "unknown entity and sequence above produced max are reported",
			produced: map[string]Produced{"a": {Max: 0}},
			log:      "a 0\na 1\nz 0\n",
			want:     Counts{Msgs: 3, Unique: 3, Unproduced: 2},
			pass:     true,
		},
		{
			name:     "sparse sequences across bitset words",
			produced: map[string]Produced{"a": {Max: 300}},
			log:      "a 200\na 300\na 5\n",
			want:     Counts{Msgs: 3, Unique: 3, Violations: 1, Gaps: 298},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := writeFile(t, t.TempDir(), "q_g.log", tt.log)
			r, err := Check(tt.produced, []Stage{{Name: "q_g", Path: path}}, Options{AckErrors: tt.ackErrs})
			if err != nil {
				t.Fatal(err)
			}
			if got := r.Stages[0].Counts; got != tt.want {
				t.Errorf("counts = %+v, want %+v", got, tt.want)
			}
			if r.Total != tt.want {
				t.Errorf("total = %+v, want %+v", r.Total, tt.want)
			}
			if r.Pass != tt.pass || r.Stages[0].Pass != tt.pass {
				t.Errorf("pass = %v (stage %v), want %v", r.Pass, r.Stages[0].Pass, tt.pass)
			}
		})
	}
}

func TestGapTermClamp(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name                    string
		maxSeen, base, distinct int64
		want                    int64
	}{
		{"complete span", 9, 0, 10, 0},
		{"one missing", 9, 0, 9, 1},
		{"non-zero base, two missing", 19, 10, 8, 2},
		{"base above everything seen", 4, 100, 0, 0},
		{"more distinct than the span", 4, 0, 7, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := gapTerm(tt.maxSeen, tt.base, tt.distinct); got != tt.want {
				t.Errorf("gapTerm(%d, %d, %d) = %d, want %d", tt.maxSeen, tt.base, tt.distinct, got, tt.want)
			}
		})
	}
	// The sum the verdict uses: the negative term must not cancel the real gap.
	if sum := gapTerm(4, 100, 0) + gapTerm(3, 0, 3); sum != 1 {
		t.Errorf("clamped sum = %d, want 1", sum)
	}
}

func TestCheckMalformed(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		log  string
		line int
	}{
		{"no space", "a 0\nbad\n", 2},
		{"two spaces", "a  1\n", 1},
		{"trailing space", "a 0\na 1 \n", 2},
		{"negative sequence", "a -1\n", 1},
		{"plus sign", "a +1\n", 1},
		{"letters in sequence", "a 0\na 0\na x1\n", 3},
		{"empty line", "a 0\n\n", 2},
		{"empty entity", " 1\n", 1},
		{"CRLF", "a 0\r\n", 1},
		{"tab in entity", "a\tb 1\n", 1},
		{"comment-like entity", "#a 1\n", 1},
		{"sequence above MaxSeq", "a 9007199254740992\n", 1},
		{"twenty digits", "a 00000000000000000001\n", 1},
		{"missing final newline", "a 0\na 1", 2},
		{"span beyond MaxSpan", "a 0\na 1099511627776\n", 2},
		{"span beyond MaxSpan downwards", "a 1099511627776\na 0\n", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := writeFile(t, t.TempDir(), "q_g.log", tt.log)
			_, err := Check(map[string]Produced{"a": {Max: 1}}, []Stage{{Name: "q_g", Path: path}}, Options{})
			want := fmt.Sprintf("%s:%d:", path, tt.line)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("err = %v, want one naming %s", err, want)
			}
		})
	}
}

func TestCheckRejectsBadProduced(t *testing.T) {
	t.Parallel()
	path := writeFile(t, t.TempDir(), "q_g.log", "a 0\n")
	for name, p := range map[string]Produced{
		"negative base":     {Base: -1, Max: 3},
		"max below base-1":  {Base: 5, Max: 3},
		"max above MaxSeq":  {Max: MaxSeq + 1},
		"base above MaxSeq": {Base: MaxSeq + 1, Max: MaxSeq + 1},
		"far negative max":  {Max: -7},
	} {
		if _, err := Check(map[string]Produced{"a": p}, []Stage{{Name: "q_g", Path: path}}, Options{}); err == nil {
			t.Errorf("%s: Check accepted %+v", name, p)
		}
	}
}

func TestCheckMissingLog(t *testing.T) {
	t.Parallel()
	_, err := Check(nil, []Stage{{Name: "x", Path: filepath.Join(t.TempDir(), "x.log")}}, Options{})
	if err == nil {
		t.Fatal("Check of a missing log succeeded")
	}
}

func TestCheckStagesAndTotal(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	produced := map[string]Produced{"a": {Max: 2}}
	other := map[string]Produced{"b": {Max: 1}}
	stages := []Stage{
		{Name: "z_clean", Path: writeFile(t, dir, "z.log", "a 0\na 1\na 2\n")},
		{Name: "a_gap", Path: writeFile(t, dir, "a.log", "a 0\na 2\na 2\n")},
		{Name: "m_own_truth", Path: writeFile(t, dir, "m.log", "b 0\n"), Produced: other},
	}
	r, err := Check(produced, stages, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range r.Stages {
		names = append(names, s.Name)
	}
	if got := strings.Join(names, ","); got != "z_clean,a_gap,m_own_truth" {
		t.Errorf("order = %s, want the order given", got)
	}
	want := Counts{Msgs: 7, Unique: 6, Dups: 1, Gaps: 1, InFlight: 1}
	if r.Total != want {
		t.Errorf("total = %+v, want %+v", r.Total, want)
	}
	if r.Pass || !r.Stages[0].Pass || r.Stages[1].Pass || !r.Stages[2].Pass {
		t.Errorf("verdicts = %v [%v %v %v], want false [true false true]", r.Pass, r.Stages[0].Pass, r.Stages[1].Pass, r.Stages[2].Pass)
	}
}

// BenchmarkCheck streams a 1M-line log: 1000 entities x 1000 sequences, interleaved
// like a wildcard consumer's output.
func BenchmarkCheck(b *testing.B) {
	const entities, perEntity = 1000, 1000
	path := filepath.Join(b.TempDir(), "q_g.log")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriter(f)
	produced := make(map[string]Produced, entities)
	for e := range entities {
		produced[fmt.Sprintf("A.e%d", e)] = Produced{Max: perEntity + 99}
	}
	for s := range perEntity {
		for e := range entities {
			fmt.Fprintf(w, "A.e%d %d\n", e, s)
		}
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	stages := []Stage{{Name: "q_g", Path: path}}
	b.ReportAllocs()
	for b.Loop() {
		r, err := Check(produced, stages, Options{})
		if err != nil || r.Total.Msgs != entities*perEntity || !r.Pass {
			b.Fatalf("r=%+v err=%v", r.Total, err)
		}
	}
	b.ReportMetric(float64(entities*perEntity)*float64(b.N)/b.Elapsed().Seconds(), "lines/s")
}

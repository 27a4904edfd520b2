package verify

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

func TestStageLogConcurrent(t *testing.T) {
	t.Parallel()
	const writers, perWriter = 16, 5000
	path := filepath.Join(t.TempDir(), "q_g.log")
	l, err := NewStageLog(path)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			entity := fmt.Sprintf("e%d", w)
			for s := range perWriter {
				l.Record(entity, int64(s))
			}
		})
	}
	wg.Wait()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// Every line whole, and each writer's lines in its own order.
	produced := make(map[string]Produced)
	for w := range writers {
		produced[fmt.Sprintf("e%d", w)] = Produced{Max: perWriter - 1}
	}
	r, err := Check(produced, []Stage{{Name: "q_g", Path: path}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := Counts{Msgs: writers * perWriter, Unique: writers * perWriter}
	if r.Total != want || !r.Pass {
		t.Errorf("total = %+v pass=%v, want %+v and PASS", r.Total, r.Pass, want)
	}
	if l.Close() == nil {
		t.Error("second Close succeeded")
	}
	l.Record("late", 1) // dropped, must not panic
}

func TestStageLogRefusesWhatItCannotWrite(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		entity string
		seq    int64
	}{
		{"space in entity", "a b", 1},
		{"empty entity", "", 1},
		{"negative sequence", "a", -1},
		{"sequence above MaxSeq", "a", MaxSeq + 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "q_g.log")
			l, err := NewStageLog(path)
			if err != nil {
				t.Fatal(err)
			}
			l.Record("ok", 0)
			l.Record(tt.entity, tt.seq)
			l.Record("ok", 1)
			if err := l.Close(); err == nil {
				t.Fatal("Close reported nothing")
			}
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if string(raw) != "ok 0\nok 1\n" {
				t.Errorf("log = %q, want only the valid lines", raw)
			}
		})
	}
}

func TestNewStageLogError(t *testing.T) {
	t.Parallel()
	_, err := NewStageLog(filepath.Join(t.TempDir(), "missing", "q_g.log"))
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("err = %v, want ErrNotExist", err)
	}
}

func TestParseLine(t *testing.T) {
	t.Parallel()
	tests := []struct {
		line   string
		entity string
		seq    int64
		ok     bool
	}{
		{"a 0", "a", 0, true},
		{"A.e17 7406", "A.e17", 7406, true},
		{"x 007", "x", 7, true},
		{"x 9007199254740991", "x", MaxSeq, true},
		{"x 9007199254740992", "", 0, false},
		{"x 99999999999999999999", "", 0, false},
		{"x", "", 0, false},
		{"x ", "", 0, false},
		{" 1", "", 0, false},
		{"x 1 2", "", 0, false},
		{"x -1", "", 0, false},
		{"x\v 1", "", 0, false},
		{"", "", 0, false},
	}
	for _, tt := range tests {
		t.Run(strconv.Quote(tt.line), func(t *testing.T) {
			t.Parallel()
			entity, seq, err := parseLine([]byte(tt.line))
			if (err == nil) != tt.ok {
				t.Fatalf("err = %v, want ok=%v", err, tt.ok)
			}
			if tt.ok && (string(entity) != tt.entity || seq != tt.seq) {
				t.Errorf("got (%q, %d), want (%q, %d)", entity, seq, tt.entity, tt.seq)
			}
		})
	}
}

// parseLineReference is parseLine written the slow, obvious way.
func parseLineReference(line string) (string, int64, bool) {
	entity, num, found := strings.Cut(line, " ")
	if !found || entity == "" || strings.HasPrefix(entity, "#") || strings.ContainsAny(entity, " \t\n\v\f\r") {
		return "", 0, false
	}
	if num == "" || len(num) > 19 || strings.Trim(num, "0123456789") != "" {
		return "", 0, false
	}
	v, err := strconv.ParseUint(num, 10, 64)
	if err != nil || v > MaxSeq {
		return "", 0, false
	}
	return entity, int64(v), true
}

func FuzzParseLine(f *testing.F) {
	for _, s := range []string{"a 0", "A.e17 7406", "x 9007199254740992", "x -1", " 1", "a\t1 2", "#a 1", "a 1 ", "é 12"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		entity, seq, err := parseLine([]byte(line))
		wantEntity, wantSeq, ok := parseLineReference(line)
		if (err == nil) != ok {
			t.Fatalf("parseLine(%q) err = %v, reference ok = %v", line, err, ok)
		}
		if !ok {
			return
		}
		if string(entity) != wantEntity || seq != wantSeq {
			t.Fatalf("parseLine(%q) = (%q, %d), reference (%q, %d)", line, entity, seq, wantEntity, wantSeq)
		}
		// What StageLog would write for it parses back to the same.
		canon := string(entity) + " " + strconv.FormatInt(seq, 10)
		e2, s2, err := parseLine([]byte(canon))
		if err != nil || string(e2) != string(entity) || s2 != seq {
			t.Fatalf("canonical %q: (%q, %d, %v)", canon, e2, s2, err)
		}
	})
}

func BenchmarkStageLogRecord(b *testing.B) {
	l, err := NewStageLog(filepath.Join(b.TempDir(), "q_g.log"))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		var s int64
		for pb.Next() {
			l.Record("A.e123", s)
			s++
		}
	})
	if err := l.Close(); err != nil {
		b.Fatal(err)
	}
}

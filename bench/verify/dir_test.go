package verify

import (
	"path/filepath"
	"strings"
	"testing"
)

func stageNames(r Report) string {
	var names []string
	for _, s := range r.Stages {
		names = append(names, s.Name)
	}
	return strings.Join(names, ",")
}

func TestDir(t *testing.T) {
	t.Parallel()
	const meta = "a 1\n"
	tests := []struct {
		name    string
		files   map[string]string
		opts    Options
		order   string
		total   Counts
		pass    bool
		wantErr string // substring; empty means success
	}{
		{
			name:  "name order without a stages file",
			files: map[string]string{ProducedFile: meta, "z_g.log": "a 0\na 1\n", "b_g.log": "a 0\n", "notes.txt": "x"},
			order: "b_g,z_g",
			total: Counts{Msgs: 3, Unique: 3, InFlight: 1},
			pass:  true,
		},
		{
			name: "stages file fixes the order, unlisted logs follow",
			files: map[string]string{ProducedFile: meta, "stages": "# order\nz_g\n\nm_g\n",
				"z_g.log": "a 0\n", "m_g.log": "a 0\n", "c_g.log": "a 1\na 0\n"},
			order: "z_g,m_g,c_g",
			total: Counts{Msgs: 4, Unique: 4, Violations: 1, InFlight: 2},
		},
		{
			name:  "ack failures exempt order violations",
			files: map[string]string{ProducedFile: meta, "c_g.log": "a 1\na 0\n"},
			opts:  Options{AckErrors: 1},
			order: "c_g",
			total: Counts{Msgs: 2, Unique: 2, Violations: 1},
			pass:  true,
		},
		{
			// Two flows over the same entity ids, each with its own sequence space.
			name: "per-stage ground truth",
			files: map[string]string{"produced-A.meta": "e1 2\n", "produced-B.meta": "e1 0\n",
				"stages":   "A_db produced-A.meta\nB_cal produced-B.meta\n",
				"A_db.log": "e1 0\ne1 1\n", "B_cal.log": "e1 0\n"},
			order: "A_db,B_cal",
			total: Counts{Msgs: 3, Unique: 3, InFlight: 1},
			pass:  true,
		},
		{
			name:    "listed stage without a log",
			files:   map[string]string{ProducedFile: meta, "stages": "a_g\nb_g\n", "a_g.log": "a 0\n"},
			wantErr: `stage "b_g" is listed`,
		},
		{
			name:    "no logs",
			files:   map[string]string{ProducedFile: meta},
			wantErr: "no stage logs",
		},
		{
			name:    "missing produced.meta",
			files:   map[string]string{"a_g.log": "a 0\n"},
			wantErr: ProducedFile,
		},
		{
			name:    "stage listed twice",
			files:   map[string]string{ProducedFile: meta, "stages": "a_g\na_g\n", "a_g.log": "a 0\n"},
			wantErr: "stages:2:",
		},
		{
			name:    "metafile outside the run directory",
			files:   map[string]string{ProducedFile: meta, "stages": "a_g ../produced.meta\n", "a_g.log": "a 0\n"},
			wantErr: "stages:1:",
		},
		{
			name:    "malformed log names file and line",
			files:   map[string]string{ProducedFile: meta, "a_g.log": "a 0\na one\n"},
			wantErr: "a_g.log:2:",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			for name, content := range tt.files {
				writeFile(t, dir, name, content)
			}
			r, err := Dir(dir, tt.opts)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := stageNames(r); got != tt.order {
				t.Errorf("order = %s, want %s", got, tt.order)
			}
			if r.Total != tt.total || r.Pass != tt.pass {
				t.Errorf("total = %+v pass=%v, want %+v pass=%v", r.Total, r.Pass, tt.total, tt.pass)
			}
		})
	}
}

// TestDirRoundTrip writes a run the way the pipeline does (StageLog, WriteProduced, a
// stages file) and verifies it from the directory alone.
func TestDirRoundTrip(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, name := range []string{"cm-avail_cm-db", "cm-ota-sync_ota-1"} {
		l, err := NewStageLog(filepath.Join(dir, name+LogSuffix))
		if err != nil {
			t.Fatal(err)
		}
		for s := range int64(100) {
			l.Record("A.e1", s)
			l.Record("A.e2", s)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	produced := map[string]Produced{"A.e1": {Max: 104}, "A.e2": {Max: 99}}
	if err := WriteProduced(filepath.Join(dir, ProducedFile), produced); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, StagesFile, "cm-ota-sync_ota-1\ncm-avail_cm-db\n")
	r, err := Dir(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := stageNames(r); got != "cm-ota-sync_ota-1,cm-avail_cm-db" {
		t.Errorf("order = %s", got)
	}
	want := Counts{Msgs: 400, Unique: 400, InFlight: 10}
	if r.Total != want || !r.Pass {
		t.Errorf("total = %+v pass=%v, want %+v PASS", r.Total, r.Pass, want)
	}
}

package verify

import (
	"encoding/json"
	"strings"
	"testing"
)

// seedTable is the verdict block of the certified run of Queen's ordered-pipeline benchmark (benchmarks/ordered-pipeline,
// raw/t3.out), byte for byte.
const seedTable = `stage(queue_group)               msgs     unique     dups     gaps    viols   inflight  verdict
cm-avail_cm-db                7379349    7379349        0        0        0      27993  PASS
cm-prices_cm-cal              7375023    7375023        0        0        0      32228  PASS
cm-ota-sync_ota-1             7377245    7377245        0        0        0      30097  PASS
cm-ota-sync_ota-2             7376882    7376882        0        0        0      30460  PASS
cm-ota-sync_ota-3             7376173    7376173        0        0        0      31169  PASS
cm-ota-sync_ota-4             7376503    7376503        0        0        0      30839  PASS
cm-ota-sync_ota-5             7377370    7377370        0        0        0      29972  PASS
cm-ota-prices_otap-1          7372710    7372710        0        0        0      34541  PASS
cm-ota-prices_otap-2          7373102    7373102        0        0        0      34149  PASS
cm-ota-prices_otap-3          7373159    7373159        0        0        0      34092  PASS
cm-ota-prices_otap-4          7373210    7373210        0        0        0      34041  PASS
cm-ota-prices_otap-5          7372682    7372682        0        0        0      34569  PASS
TOTAL                        88503408   88503408        0        0        0     384150
VERDICT: PASS  (0 gaps below frontier, 0 order-violations, 0 dups, 384150 in-flight at cutoff)
`

func TestTableReproducesSeed(t *testing.T) {
	t.Parallel()
	rows := []struct {
		name           string
		msgs, inflight int64
	}{
		{"cm-avail_cm-db", 7379349, 27993},
		{"cm-prices_cm-cal", 7375023, 32228},
		{"cm-ota-sync_ota-1", 7377245, 30097},
		{"cm-ota-sync_ota-2", 7376882, 30460},
		{"cm-ota-sync_ota-3", 7376173, 31169},
		{"cm-ota-sync_ota-4", 7376503, 30839},
		{"cm-ota-sync_ota-5", 7377370, 29972},
		{"cm-ota-prices_otap-1", 7372710, 34541},
		{"cm-ota-prices_otap-2", 7373102, 34149},
		{"cm-ota-prices_otap-3", 7373159, 34092},
		{"cm-ota-prices_otap-4", 7373210, 34041},
		{"cm-ota-prices_otap-5", 7372682, 34569},
	}
	r := Report{Pass: true}
	for _, row := range rows {
		c := Counts{Msgs: row.msgs, Unique: row.msgs, InFlight: row.inflight}
		r.Stages = append(r.Stages, StageReport{Name: row.name, Counts: c, Pass: true})
		r.Total.add(c)
	}
	if got := r.Table(); got != seedTable {
		t.Errorf("table differs from Queen's:\n%s\nwant:\n%s", got, seedTable)
	}
}

// smallGolden is the table of the small run built in TestTableGolden: a duplicate and an
// unknown entity on the first stage, a gap and a reordering on the second, an empty log
// with a 30-character name (the name column widens for every row) on the third.
const smallGolden = `stage(queue_group)                   msgs     unique     dups     gaps    viols   inflight  verdict
q-in_db                                 6          5        1        0        0          3  PASS
q-out_fan-1                             4          4        0        1        1          2  FAIL
a-very-long-queue-name_group-1          0          0        0        0        0          7  PASS
TOTAL                                  10          9        1        1        1         12
note: 1 messages outside the produced ground truth (unknown entity, or sequence below base or above the produced maximum)
VERDICT: FAIL  (1 gaps below frontier, 1 order-violations, 1 dups, 12 in-flight at cutoff)
`

func TestTableGolden(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	produced := map[string]Produced{"a": {Max: 3}, "b": {Base: 5, Max: 7}}
	stages := []Stage{
		{Name: "q-in_db", Path: writeFile(t, dir, "1.log", "a 0\nb 5\na 1\na 1\nb 6\nz 0\n")},
		{Name: "q-out_fan-1", Path: writeFile(t, dir, "2.log", "a 0\na 3\na 1\nb 5\n")},
		{Name: "a-very-long-queue-name_group-1", Path: writeFile(t, dir, "3.log", "")},
	}
	r, err := Check(produced, stages, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Table(); got != smallGolden {
		t.Errorf("table:\n%s\nwant:\n%s", got, smallGolden)
	}
	if r.Verdict() != "FAIL" {
		t.Errorf("Verdict() = %q", r.Verdict())
	}
}

func TestTableAckErrorNote(t *testing.T) {
	t.Parallel()
	r := Report{AckErrors: 4, Pass: true, Total: Counts{Violations: 2}}
	lines := strings.Split(strings.TrimSuffix(r.Table(), "\n"), "\n")
	want := []string{
		"note: ackErr=4, so order-violations are reported but not fatal",
		"VERDICT: PASS  (0 gaps below frontier, 2 order-violations, 0 dups, 0 in-flight at cutoff)",
	}
	if got := lines[len(lines)-2:]; strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("last lines = %q, want %q", got, want)
	}
}

func TestJSON(t *testing.T) {
	t.Parallel()
	r := Report{
		Stages:    []StageReport{{Name: "q_g", Counts: Counts{Msgs: 3, Unique: 2, Dups: 1, InFlight: 4}, Pass: true}},
		Total:     Counts{Msgs: 3, Unique: 2, Dups: 1, InFlight: 4},
		AckErrors: 0,
		Pass:      true,
	}
	want := `{"stages":[{"stage":"q_g","msgs":3,"unique":2,"dups":1,"gaps":0,"viols":0,"inflight":4,"unproduced":0,"pass":true}],` +
		`"total":{"msgs":3,"unique":2,"dups":1,"gaps":0,"viols":0,"inflight":4,"unproduced":0},"ack_errors":0,"pass":true}`
	if got := r.JSON(); got != want {
		t.Errorf("JSON:\n%s\nwant:\n%s", got, want)
	}
	var back Report
	if err := json.Unmarshal([]byte(r.JSON()), &back); err != nil || back.Stages[0] != r.Stages[0] || back.Total != r.Total {
		t.Errorf("round trip: %+v, %v", back, err)
	}
	if got := (Report{}).JSON(); !strings.Contains(got, `"stages":[]`) {
		t.Errorf("empty report JSON = %s, want stages as []", got)
	}
}

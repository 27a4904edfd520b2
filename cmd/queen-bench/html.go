package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/queen-go/queen/bench/load"
	"github.com/queen-go/queen/bench/report"
	"github.com/queen-go/queen/bench/verify"
)

// progressFlag is -progress: auto (a live status line when stderr is a terminal), on
// or off.
type progressFlag string

func (p *progressFlag) String() string { return string(*p) }

func (p *progressFlag) Set(s string) error {
	switch s {
	case "auto", "on", "off":
		*p = progressFlag(s)
		return nil
	}
	return fmt.Errorf("%q is not auto, on or off", s)
}

// outcome is what a mode's run leaves for its HTML report.
type outcome struct {
	summary *load.Summary
	verdict *report.Verdict
}

// reportFlags declares -report and -progress, which every load mode has.
func (m *modeFlags) reportFlags() {
	m.progress = "auto"
	m.fs.Var(&m.progress, "progress", "live status line on stderr (elapsed, messages, rate over the last second, errors), redrawn each second: "+
		"auto (only when stderr is a terminal), on or off")
	m.fs.StringVar(&m.html, "report", "", "after the run, write a self-contained HTML report to this file: configuration, throughput and "+
		"latency over time, errors, CPU per message, the verifier's verdict")
}

// live wraps the output in a live status line when -progress asks for one.
func (m *modeFlags) live(stdout, stderr io.Writer) {
	if m.progress == "" || m.progress == "off" || m.progress == "auto" && !isTerminal(stderr) {
		return
	}
	m.common.Out = load.NewLiveWriter(stdout, stderr, sameTerminal(stdout, stderr))
}

// isTerminal reports whether w is a character device (a terminal: not a file, a pipe
// or a CI log). golang.org/x/term is not a dependency of the module, and this is all
// the tool needs; /dev/null passes too, where the line is simply lost.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// sameTerminal reports whether a and b are the same terminal (stdout and stderr of an
// interactive shell), where the progress lines must scroll above the live line.
func sameTerminal(a, b io.Writer) bool {
	fa, oka := a.(*os.File)
	fb, okb := b.(*os.File)
	if !oka || !okb || !isTerminal(a) || !isTerminal(b) {
		return false
	}
	sa, erra := fa.Stat()
	sb, errb := fb.Stat()
	return erra == nil && errb == nil && os.SameFile(sa, sb)
}

// writeRunReport writes the HTML report of the run just made.
func (m *modeFlags) writeRunReport(mode string, args []string, started time.Time, runErr error) error {
	r := report.Run{Mode: mode, Target: m.common.URL, Command: report.Redact(commandLine(mode, args)), Started: started,
		Wall: time.Since(started), Machine: report.ThisMachine(), Flags: flagsOf(m.fs), Summary: m.out.summary,
		Verdict: m.out.verdict}
	if runErr != nil {
		r.Err = runErr.Error()
	}
	if r.Summary == nil && r.Verdict == nil {
		r.Notes = append(r.Notes, "The run ended before it measured anything: no figures.")
	}
	title := fmt.Sprintf("queen-bench %s, %s", mode, started.UTC().Format("2006-01-02 15:04 MST"))
	return writePage(m.html, report.Page{Title: title, Runs: []report.Run{r}})
}

func writePage(name string, p report.Page) error {
	f, err := os.Create(name)
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	w := bufio.NewWriter(f)
	err = report.Write(w, p)
	if ferr := w.Flush(); err == nil && ferr != nil {
		err = fmt.Errorf("report: %w", ferr)
	}
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("report: %w", cerr)
	}
	return err
}

// flagsOf lists every flag of the mode, its value (URL passwords redacted), and
// whether the command line set it.
func flagsOf(fs *flag.FlagSet) []report.Flag {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var out []report.Flag
	fs.VisitAll(func(f *flag.Flag) {
		out = append(out, report.Flag{Name: f.Name, Value: report.Redact(f.Value.String()), Default: report.Redact(f.DefValue),
			Usage: f.Usage, Set: set[f.Name]})
	})
	return out
}

// commandLine is the command as typed, arguments quoted where a shell would need it.
func commandLine(mode string, args []string) string {
	parts := []string{"queen-bench", mode}
	for _, a := range args {
		if a == "" || strings.ContainsAny(a, " \t\n'\"\\$`*?&;|<>()[]{}") {
			a = strconv.Quote(a)
		}
		parts = append(parts, a)
	}
	return strings.Join(parts, " ")
}

// saved is what a results file holds for the HTML page.
type saved struct {
	runs    []report.Run
	results []load.Result // the side-by-side lines, for the Markdown table
	skipped int           // lines that are neither (a run's human output)
}

// readSaved reads a results file for the HTML page: result lines of a side-by-side
// run ({"scenario", ...}), JSON summary lines as every mode prints them ({"mode", ...})
// and the pipeline verifier's JSON line ({"stages", ...}, after its run's summary), so
// a run's saved output works as well as scripts/bench-hotlist.sh's results. Other lines
// are skipped; a line that starts like JSON and is not is an error naming it.
func readSaved(r io.Reader) (saved, error) {
	var s saved
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		if !strings.HasPrefix(line, "{") {
			s.skipped++
			continue
		}
		var probe map[string]json.RawMessage
		if err := json.Unmarshal([]byte(line), &probe); err != nil {
			return s, fmt.Errorf("report: line %d: %w", n, err)
		}
		switch {
		case probe["scenario"] != nil:
			var res load.Result
			if err := json.Unmarshal([]byte(line), &res); err != nil || len(res.Summary) == 0 {
				return s, fmt.Errorf("report: line %d: not a result line: %v", n, err)
			}
			var sum load.Summary
			if err := json.Unmarshal(res.Summary, &sum); err != nil {
				return s, fmt.Errorf("report: line %d: summary: %w", n, err)
			}
			s.results = append(s.results, res)
			setting := "off"
			if res.Hotlist != 0 {
				setting = "on"
			}
			name := res.Scenario
			if res.Step != "" && res.Step != res.Scenario {
				name += " (" + res.Step + ")"
			}
			s.runs = append(s.runs, savedRun(fmt.Sprintf("%s, round %d, hot-list %s", name, res.Round, setting), sum))
		case probe["mode"] != nil:
			var sum load.Summary
			if err := json.Unmarshal([]byte(line), &sum); err != nil {
				return s, fmt.Errorf("report: line %d: summary: %w", n, err)
			}
			s.runs = append(s.runs, savedRun(fmt.Sprintf("%s (line %d)", sum.Mode, n), sum))
		case probe["stages"] != nil && len(s.runs) > 0 && s.runs[len(s.runs)-1].Mode == "pipeline":
			var rep verify.Report
			if err := json.Unmarshal([]byte(line), &rep); err != nil {
				return s, fmt.Errorf("report: line %d: verifier: %w", n, err)
			}
			s.runs[len(s.runs)-1].Verdict = report.FromPipeline(rep)
		default:
			s.skipped++
		}
	}
	return s, sc.Err()
}

func savedRun(name string, sum load.Summary) report.Run {
	return report.Run{Name: name, Mode: sum.Mode, Summary: &sum, Verdict: report.FromSummary(sum)}
}

// savedPage renders a results file as HTML; table is load.Report's Markdown ("" when
// the file has no side-by-side lines).
func savedPage(file string, s saved, table string) (report.Page, error) {
	if len(s.runs) == 0 {
		return report.Page{}, errors.New("report: no JSON summary or result line in " + file)
	}
	p := report.Page{Title: "queen-bench results: " + file, Source: file, Runs: s.runs, Notes: []string{
		"Saved results hold each run's JSON summary line only: no time series (throughput, latency and errors over time), " +
			"no latency histogram, no flags or machine. A mode run with -report FILE writes the full page.",
	}}
	if s.skipped > 0 {
		p.Notes = append(p.Notes, fmt.Sprintf("%d other lines of the file (a run's printed output) were skipped.", s.skipped))
	}
	if table != "" {
		if t, ok := report.MarkdownTable("Hot-list on and off, side by side (as queen-bench report prints it)", table); ok {
			p.Tables = append(p.Tables, t)
		}
	}
	return p, nil
}

// reportHTML is report -file F -report H: the HTML page of every run in F, and, when F
// holds side-by-side result lines, their Markdown table on out as without -report.
func reportHTML(out io.Writer, in io.Reader, file, html string) (int, error) {
	s, err := readSaved(in)
	if err != nil {
		return 2, err
	}
	var table strings.Builder
	if len(s.results) > 0 {
		if err := load.Report(&table, s.results); err != nil {
			return 2, err
		}
		fmt.Fprint(out, table.String())
	}
	p, err := savedPage(file, s, table.String())
	if err != nil {
		return 2, err
	}
	if err := writePage(html, p); err != nil {
		return 2, err
	}
	fmt.Fprintf(out, "report: %d runs written to %s\n", len(s.runs), html)
	return 0, nil
}

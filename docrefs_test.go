package queen

import (
	"go/scanner"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/queen-go/queen/config"
)

// The repository stands on its own: every document a comment or a Markdown page cites is
// in it. TestDocumentReferences reads the comments of every Go file and the whole text of
// every Markdown, SQL, shell and YAML file and the Makefile, and fails on a citation that
// a person who cloned the repository could not follow: a path outside it (the
// specifications' folder beside it, an absolute path to a document), a document path that
// does not exist (a bare name of a page that lives in docs/), a numbered section or a row
// that the cited page of docs/ does not have, an issue number, or a seed (the design
// documents the broker was written from, which are not in the repository).

// generatedDocs are files the tools write and the documents name as their output: they
// are not in the repository until a run makes them.
var generatedDocs = []string{"faults-table.md"}

var (
	urlRE      = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://[^\s)>\]"'` + "`" + `]*`)
	outsideRE  = regexp.MustCompile(`\.\./shared\b|(?:^|[^\w.~-])/work/[^\s)\]"',;` + "`" + `]*`)
	absDocRE   = regexp.MustCompile(`(?:^|[\s(\[` + "`" + `"'=])(/[\w.-]+(?:/[\w.-]+)*\.(?:md|txt))\b`)
	docPathRE  = regexp.MustCompile(`(?:^|[^\w/.~${}-])((?:\.{1,2}/)*[\w-][\w.-]*(?:/[\w.-]+)*\.(?:md|txt))\b`)
	docsDirRE  = regexp.MustCompile(`(?:^|[^\w/.~-])(docs/[\w./-]*[\w/])`)
	issueRE    = regexp.MustCompile(`(?i)\bissues? #?[0-9]+`)
	seedRE     = regexp.MustCompile(`(?i)\bseeds? [0-9]{3}\b|\bthe seed's\b|\bthe seeds\b`)
	sectionRE  = regexp.MustCompile(`([\w./-]+\.md)(?:'s)? §([0-9]+(?:\.[0-9]+)*[a-z]?)`)
	rowRE      = regexp.MustCompile(`docs/reliability\.md(?:'s)? (?:(F[0-9]+)|(L[0-9]+)|bad inputs? #([0-9]+))`)
	headingRE  = regexp.MustCompile(`(?m)^#+ ([0-9]+(?:\.[0-9]+)*[a-z]?)\.? `)
	planRowRE  = regexp.MustCompile(`(?m)^\| (F[0-9]+|[0-9]+) \||\*\*(L[0-9]+)\*\*`)
	skipDirs   = []string{"testdata", "vendor", "node_modules", "bin"}
	scannedExt = []string{".md", ".sql", ".sh", ".yaml", ".yml"}
)

// docIndex answers what the matcher needs to know about the repository.
type docIndex struct {
	exists   func(p string) bool        // a slash-separated path from the root
	sections map[string]map[string]bool // document -> its numbered sections ("5.3")
	rows     map[string]bool            // ids of docs/reliability.md's rows ("F8", "L4", "28")
}

// badRef is one citation that cannot be followed.
type badRef struct {
	line int
	ref  string
	why  string
}

// checkRefs returns the citations of text (the file at dir, slash-separated, from the
// root; first is the line number of text's first line) that cannot be followed.
func checkRefs(text, dir string, first int, idx docIndex) []badRef {
	var out []badRef
	for i, line := range strings.Split(text, "\n") {
		n := first + i
		line = urlRE.ReplaceAllString(line, " ")
		add := func(ref, why string) { out = append(out, badRef{n, ref, why}) }
		for _, m := range outsideRE.FindAllString(line, -1) {
			add(strings.TrimLeft(m, " ([`\"'="), "a path outside the repository")
		}
		for _, m := range absDocRE.FindAllStringSubmatch(line, -1) {
			if !strings.HasPrefix(m[1], "/work/") {
				add(m[1], "an absolute path")
			}
		}
		for _, m := range docPathRE.FindAllStringSubmatch(line, -1) {
			if !resolves(m[1], dir, idx) && !slices.Contains(generatedDocs, m[1]) {
				add(m[1], "no such document in the repository")
			}
		}
		for _, m := range docsDirRE.FindAllStringSubmatch(line, -1) {
			p := strings.TrimRight(m[1], "/.")
			if !strings.HasSuffix(p, ".md") && !strings.HasSuffix(p, ".txt") && !idx.exists(p) {
				add(p, "no such path in the repository")
			}
		}
		for _, m := range issueRE.FindAllString(line, -1) {
			add(m, "an issue number")
		}
		for _, m := range seedRE.FindAllString(line, -1) {
			add(m, "a seed: a design document outside the repository")
		}
		for _, m := range sectionRE.FindAllStringSubmatch(line, -1) {
			doc := path.Clean(m[1])
			if _, ok := idx.sections[doc]; !ok && !idx.exists(doc) {
				doc = path.Join(dir, m[1])
			}
			if secs, ok := idx.sections[doc]; ok && !secs[m[2]] {
				add(m[0], "no such section")
			} else if !ok && idx.exists(doc) {
				add(m[0], "the document has no numbered sections")
			}
		}
		for _, m := range rowRE.FindAllStringSubmatch(line, -1) {
			id := m[1] + m[2] + m[3]
			if !idx.rows[id] {
				add(m[0], "no such row in docs/reliability.md")
			}
		}
	}
	return out
}

// resolves says whether p names a file or directory from the root or from dir.
func resolves(p, dir string, idx docIndex) bool {
	if strings.HasPrefix(p, "/") {
		return true // absolute paths are absDocRE's
	}
	return (!strings.HasPrefix(p, "../") && idx.exists(path.Clean(p))) || idx.exists(path.Join(dir, p))
}

// repoIndex reads the documents' sections and rows from the working tree.
func repoIndex(t *testing.T) docIndex {
	t.Helper()
	idx := docIndex{
		exists: func(p string) bool {
			if p == "." || p == "" || strings.HasPrefix(p, "..") {
				return false
			}
			_, err := os.Stat(filepath.FromSlash(p))
			return err == nil
		},
		sections: map[string]map[string]bool{},
		rows:     map[string]bool{},
	}
	for _, doc := range []string{"docs/api.md", "docs/streams.md"} {
		b, err := os.ReadFile(doc)
		if os.IsNotExist(err) {
			continue // every citation of it is then reported as a missing document
		} else if err != nil {
			t.Fatal(err)
		}
		idx.sections[doc] = map[string]bool{}
		for _, m := range headingRE.FindAllStringSubmatch(string(b), -1) {
			idx.sections[doc][m[1]] = true
		}
	}
	b, err := os.ReadFile("docs/reliability.md")
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	for _, m := range planRowRE.FindAllStringSubmatch(string(b), -1) {
		idx.rows[m[1]+m[2]] = true
	}
	return idx
}

// goComments returns the comments of a Go file with their first line numbers.
func goComments(name string, src []byte) (texts []string, lines []int) {
	fset := token.NewFileSet()
	var s scanner.Scanner
	s.Init(fset.AddFile(name, -1, len(src)), src, nil, scanner.ScanComments)
	for {
		pos, tok, lit := s.Scan()
		if tok == token.EOF {
			return texts, lines
		}
		if tok == token.COMMENT {
			texts = append(texts, lit)
			lines = append(lines, fset.Position(pos).Line)
		}
	}
}

func TestDocumentReferences(t *testing.T) {
	idx := repoIndex(t)
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if p != "." && (strings.HasPrefix(name, ".") || slices.Contains(skipDirs, name)) {
				return filepath.SkipDir
			}
			return nil
		}
		ext := filepath.Ext(name)
		if ext != ".go" && name != "Makefile" && !slices.Contains(scannedExt, ext) {
			return nil
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		texts, lines := []string{string(src)}, []int{1}
		if ext == ".go" {
			texts, lines = goComments(p, src)
		}
		dir := "." // a path in code, SQL or YAML is read from the root
		if ext == ".md" {
			dir = path.Dir(filepath.ToSlash(p)) // Markdown links are relative to the page
		}
		for i, text := range texts {
			for _, r := range checkRefs(text, dir, lines[i], idx) {
				t.Errorf("%s:%d: %q: %s", p, r.line, r.ref, r.why)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestCheckRefs(t *testing.T) {
	files := map[string]bool{
		"README.md": true, "docs": true, "docs/api.md": true, "docs/streams.md": true,
		"docs/reliability.md": true, "docs/design.md": true, "docs/openapi.yaml": true,
		"docs/soak": true, "core/spool/doc.go": true,
	}
	idx := docIndex{
		exists: func(p string) bool { return files[p] },
		sections: map[string]map[string]bool{
			"docs/api.md":     {"1": true, "5": true, "5.3": true, "5.11a": true},
			"docs/streams.md": {"3.2": true},
		},
		rows: map[string]bool{"F8": true, "L4": true, "28": true},
	}
	// The forbidden citations are spelt in pieces, so that this file is not itself a
	// citation the repository's other checks (and readers grepping) would find.
	const (
		outside   = ".." + "/shared"
		workspace = "/work" + "/shared"
		issue     = "Issue" + " "
	)
	tests := []struct {
		name, dir, text string
		want            []string // the refs reported, in order
	}{
		{"docs path with section", ".", "the ack contract (docs/api.md §5.3)", nil},
		{"possessive and letter section", ".", "docs/api.md's §5.11a fields", nil},
		{"section then full stop", ".", "as docs/api.md §5.3. Then", nil},
		{"unknown section", ".", "docs/api.md §5.99 says", []string{"docs/api.md §5.99"}},
		{"section of an unnumbered document", ".", "docs/design.md §9", []string{"docs/design.md §9"}},
		{"bare api.md", ".", "see api.md §5.1", []string{"api.md"}},
		{"bare faults.md", ".", "(faults.md F8)", []string{"faults.md"}},
		{"spec path outside", ".", "see " + outside + "/spec/api.md", []string{outside, outside + "/spec/api.md"}},
		{"absolute workspace path", ".", "(" + workspace + "/spec/streams.md)", []string{workspace + "/spec/streams.md"}},
		{"absolute document path", ".", "read /etc/queen/notes.md first", []string{"/etc/queen/notes.md"}},
		{"missing docs file", ".", "figures in docs/perf.md", []string{"docs/perf.md"}},
		{"missing docs directory", ".", "see docs/img/ for pictures", []string{"docs/img"}},
		{"existing docs directory", ".", "the CSV in docs/soak/", nil},
		{"docs yaml", ".", "docs/openapi.yaml lists the bounds.", nil},
		{"relative link in docs", "docs", "[streams.md](streams.md) and [openapi.yaml](openapi.yaml)", nil},
		{"relative section in docs", "docs", "streams.md §3.2 and api.md §5.3, not api.md §5.98", []string{"api.md §5.98"}},
		{"relative link to the root", "docs", "the [README](../README.md)", nil},
		{"relative link missing", "docs", "[x](../NOTES.md)", []string{"../NOTES.md"}},
		{"root document", "core/push", "README.md says", nil},
		{"generated output", ".", "keeps faults-table.md", nil},
		{"shell variable", ".", "cat \"$dir/affinity.txt\" ${out}/x.md", nil},
		{"issue number", ".", "measured in " + issue + "18's profile", []string{issue + "18"}},
		{"issue with hash", ".", issue + "#7", []string{issue + "#7"}},
		{"issues plural", ".", "issue" + "s 2 and 3", []string{"issue" + "s 2"}},
		{"the word issue", ".", "the issue is the lock; issued 3 times", nil},
		{"seed", ".", "the livelock of seed 001 and seeds 000/002", []string{"seed 001", "seeds 000"}},
		{"seeded numbers", ".", "seeded 100 partitions", nil},
		{"the seed's", ".", "the seed's table, as the seeds say", []string{"the seed's", "the seeds"}},
		{"a random seed", ".", "logs the random seed 42 of the run and seed %d", nil},
		{"url", ".", "https://github.com/queen-mq/queen/blob/master/docs/api.md and http://x/" + issue + "4", nil},
		{"go identifiers", ".", "api.Handle and md.Render, s.md5", nil},
		{"go file paths", ".", "core/spool/doc.go gives the format", nil},
		{"reliability rows", ".", "docs/reliability.md F8, docs/reliability.md L4, docs/reliability.md bad input #28", nil},
		{"unknown reliability row", ".", "docs/reliability.md F40 and docs/reliability.md bad input #31", []string{"docs/reliability.md F40", "docs/reliability.md bad input #31"}},
		{"streams section", ".", "docs/streams.md §3.2", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, r := range checkRefs(tc.text, tc.dir, 1, idx) {
				got = append(got, r.ref)
			}
			slices.Sort(got)
			want := slices.Clone(tc.want)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("checkRefs(%q) = %q, want %q", tc.text, got, want)
			}
		})
	}
}

func TestGoCommentsOnly(t *testing.T) {
	src := "package p\n\n// see api.md §1\nvar s = \"api.md\" // ISSUE 4\n/* line one\nseed 001 */\n"
	texts, lines := goComments("p.go", []byte(src))
	want := []string{"// see api.md §1", "// ISSUE 4", "/* line one\nseed 001 */"}
	if !slices.Equal(texts, want) || !slices.Equal(lines, []int{3, 4, 5}) {
		t.Fatalf("goComments = %q at %v, want %q at [3 4 5]", texts, lines, want)
	}
	var got []string
	for i, text := range texts {
		for _, r := range checkRefs(text, ".", lines[i], docIndex{exists: func(string) bool { return false }}) {
			got = append(got, strconv.Itoa(r.line)+":"+r.ref)
		}
	}
	if !slices.Equal(got, []string{"3:api.md", "4:ISSUE 4", "6:seed 001"}) {
		t.Fatalf("refs in comments = %q", got)
	}
}

// TestAPIDocListsEveryVariable: docs/api.md §6 names every environment variable the broker
// reads, aliases included, so that the reference cannot fall behind the configuration.
func TestAPIDocListsEveryVariable(t *testing.T) {
	b, err := os.ReadFile("docs/api.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	start := strings.Index(doc, "\n## 6. ")
	end := strings.Index(doc, "\n## 7. ")
	if start < 0 || end < start {
		t.Fatal("docs/api.md has no section 6 followed by section 7")
	}
	env := doc[start:end]
	for _, v := range config.Variables() {
		for _, name := range append([]string{v.Name}, v.Aliases...) {
			if !strings.Contains(env, "`"+name+"`") {
				t.Errorf("docs/api.md §6 does not name `%s`", name)
			}
		}
	}
}

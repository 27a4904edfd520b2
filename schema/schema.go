package schema

import (
	"embed"
	"io/fs"
	"sort"
)

//go:embed *.sql
var files embed.FS

// File is one embedded SQL file.
type File struct {
	Name string
	SQL  string
}

// Files returns the schema files in the order they must be applied.
func Files() []File {
	names, err := fs.Glob(files, "*.sql")
	if err != nil {
		panic(err) // the pattern is a constant: Glob only fails on a bad pattern
	}
	sort.Strings(names)
	out := make([]File, 0, len(names))
	for _, n := range names {
		b, err := files.ReadFile(n)
		if err != nil {
			panic(err) // embedded files are always readable
		}
		out = append(out, File{Name: n, SQL: string(b)})
	}
	return out
}

// AdvisoryLockKey is the key of the transaction-scoped advisory lock that serialises
// schema application between brokers starting at once.
const AdvisoryLockKey = 737000

package verify

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// File names inside a run directory.
const (
	ProducedFile = "produced.meta"
	StagesFile   = "stages"
	LogSuffix    = ".log"
)

// Dir verifies a run directory written earlier: the stage logs (*.log), their ground
// truth (produced.meta unless the stages file names another file for a stage) and the
// optional stages file that fixes the order. It is what `queen-bench verify --dir` runs.
func Dir(dir string, opts Options) (Report, error) {
	entries, err := os.ReadDir(dir) // not Glob: dir may contain glob metacharacters
	if err != nil {
		return Report{}, fmt.Errorf("verify: %w", err)
	}
	present := make(map[string]bool, len(entries))
	for _, e := range entries {
		if name, ok := strings.CutSuffix(e.Name(), LogSuffix); ok && name != "" && e.Type().IsRegular() {
			present[name] = true
		}
	}
	order, metas, err := readStages(filepath.Join(dir, StagesFile))
	if err != nil {
		return Report{}, err
	}
	order, err = stageOrder(order, present)
	if err != nil {
		return Report{}, fmt.Errorf("verify: %s: %w", dir, err)
	}

	truths := make(map[string]map[string]Produced) // by file name, each read once
	stages := make([]Stage, 0, len(order))
	for _, name := range order {
		meta := cmp.Or(metas[name], ProducedFile)
		if truths[meta] == nil {
			if truths[meta], err = ReadProduced(filepath.Join(dir, meta)); err != nil {
				return Report{}, err
			}
		}
		stages = append(stages, Stage{Name: name, Path: filepath.Join(dir, name+LogSuffix), Produced: truths[meta]})
	}
	return Check(nil, stages, opts)
}

// stageOrder puts the listed stages first, then every other log in name order. A listed
// stage without a log is an error: a stage that left no log at all must not pass by
// being absent.
func stageOrder(listed []string, present map[string]bool) ([]string, error) {
	order := slices.Clone(listed)
	inList := make(map[string]bool, len(listed))
	for _, name := range listed {
		if !present[name] {
			return nil, fmt.Errorf("stage %q is listed in %s but %s is missing", name, StagesFile, name+LogSuffix)
		}
		inList[name] = true
	}
	var rest []string
	for name := range present {
		if !inList[name] {
			rest = append(rest, name)
		}
	}
	slices.Sort(rest)
	order = append(order, rest...)
	if len(order) == 0 {
		return nil, errors.New("no stage logs (*" + LogSuffix + ")")
	}
	return order, nil
}

// readStages reads the optional stages file: the listed order, and the ground-truth
// file of each stage that names one. A missing file is no error.
func readStages(path string) (order []string, metas map[string]string, err error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("verify: %w", err)
	}
	defer f.Close()
	metas = make(map[string]string)
	seen := make(map[string]bool)
	err = eachLine(f, func(line []byte) error {
		if len(line) == 0 || line[0] == '#' {
			return nil
		}
		fields := bytes.Split(line, []byte{' '})
		name := string(fields[0])
		switch {
		case len(fields) > 2:
			return errors.New(`want "name [metafile]"`)
		case name == "" || name != filepath.Base(name) || !validEntity(name):
			return fmt.Errorf("invalid stage name %q", name)
		case seen[name]:
			return fmt.Errorf("stage %q listed twice", name)
		}
		seen[name] = true
		order = append(order, name)
		if len(fields) == 2 {
			meta := string(fields[1])
			if meta == "" || meta != filepath.Base(meta) || meta == "." || meta == ".." {
				return fmt.Errorf("invalid metafile %q (want a file name in the run directory)", meta)
			}
			metas[name] = meta
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("verify: %s:%w", path, err)
	}
	return order, metas, nil
}

package verify

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
)

const (
	// MaxSeq is the highest sequence either file may hold (2^53-1, see the package doc).
	MaxSeq = 1<<53 - 1
	// MaxSpan is how far apart the lowest and highest sequence seen of one entity in one
	// stage may be: 2^30 sequences, a 128 MiB bitset. A wider span is reported as an
	// error rather than allocated.
	MaxSpan = 1 << 30
)

// producedHeader is the comment WriteProduced puts on the first line.
const producedHeader = "# queen-bench produced.meta v1: entity maxSeq [baseSeq]\n"

// Produced is the ground truth for one entity: the producer assigned every sequence in
// [Base, Max] and nothing else. Max = Base-1 means nothing was produced, which is
// equivalent to the entity being absent (WriteProduced omits it).
type Produced struct {
	Base int64 `json:"base"`
	Max  int64 `json:"max"`
}

func (p Produced) valid() error {
	switch {
	case p.Base < 0 || p.Base > MaxSeq:
		return fmt.Errorf("base %d outside [0, %d]", p.Base, int64(MaxSeq))
	case p.Max < p.Base-1 || p.Max > MaxSeq:
		return fmt.Errorf("max %d outside [base-1 = %d, %d]", p.Max, p.Base-1, int64(MaxSeq))
	}
	return nil
}

// WriteProduced writes produced to path in the produced.meta format, entities sorted,
// replacing any existing file. It refuses invalid entity ids and ranges, so that
// ReadProduced always accepts what it wrote, and omits entities with nothing produced
// (Max = Base-1): the format has no way to write max -1, and absence means the same.
func WriteProduced(path string, produced map[string]Produced) error {
	names := make([]string, 0, len(produced))
	for name, p := range produced {
		if !validEntity(name) {
			return fmt.Errorf("verify: produced: invalid entity id %q", name)
		}
		if err := p.valid(); err != nil {
			return fmt.Errorf("verify: produced: entity %q: %w", name, err)
		}
		if p.Max >= p.Base {
			names = append(names, name)
		}
	}
	slices.Sort(names)

	var buf bytes.Buffer
	buf.WriteString(producedHeader)
	for _, name := range names {
		p := produced[name]
		buf.WriteString(name)
		buf.WriteByte(' ')
		buf.Write(strconv.AppendInt(nil, p.Max, 10))
		if p.Base != 0 {
			buf.WriteByte(' ')
			buf.Write(strconv.AppendInt(nil, p.Base, 10))
		}
		buf.WriteByte('\n')
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	return nil
}

// ReadProduced reads a produced.meta file. Errors name the file and line.
func ReadProduced(path string) (map[string]Produced, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("verify: %w", err)
	}
	defer f.Close()
	produced := make(map[string]Produced)
	err = eachLine(f, func(line []byte) error {
		if len(line) > 0 && line[0] == '#' {
			return nil
		}
		name, p, err := parseProducedLine(line)
		if err != nil {
			return err
		}
		if _, dup := produced[name]; dup {
			return fmt.Errorf("entity %q listed twice", name)
		}
		produced[name] = p
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("verify: %s:%w", path, err)
	}
	return produced, nil
}

// parseProducedLine parses `entity max [base]` (without the LF).
func parseProducedLine(line []byte) (string, Produced, error) {
	fields := bytes.Split(line, []byte{' '})
	if len(fields) != 2 && len(fields) != 3 {
		return "", Produced{}, errors.New(`want "entity maxSeq [baseSeq]"`)
	}
	if !validEntity(fields[0]) {
		return "", Produced{}, fmt.Errorf("invalid entity id %q", fields[0])
	}
	var p Produced
	var ok bool
	if p.Max, ok = parseSeq(fields[1]); !ok {
		return "", Produced{}, fmt.Errorf("invalid maxSeq %q", fields[1])
	}
	if len(fields) == 3 {
		if p.Base, ok = parseSeq(fields[2]); !ok {
			return "", Produced{}, fmt.Errorf("invalid baseSeq %q", fields[2])
		}
	}
	if p.Max < p.Base {
		return "", Produced{}, fmt.Errorf("maxSeq %d below baseSeq %d", p.Max, p.Base)
	}
	return string(fields[0]), p, nil
}

// eachLine calls fn with every LF-terminated line of r (LF stripped). Errors come back
// as "N: reason" so the caller can prefix the file name and get file:line.
func eachLine(r io.Reader, fn func(line []byte) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	for n := 1; ; n++ {
		line, err := br.ReadSlice('\n')
		switch {
		case err == io.EOF && len(line) == 0:
			return nil
		case err == io.EOF:
			return fmt.Errorf("%d: last line has no terminating newline (truncated file?)", n)
		case errors.Is(err, bufio.ErrBufferFull):
			return fmt.Errorf("%d: line longer than %d bytes", n, br.Size())
		case err != nil:
			return fmt.Errorf("%d: %w", n, err)
		}
		if err := fn(line[:len(line)-1]); err != nil {
			return fmt.Errorf("%d: %w", n, err)
		}
	}
}

// validEntity reports whether b may be an entity id: non-empty, no ASCII whitespace
// (the field separator and line terminator must stay unambiguous), no leading "#"
// (produced.meta uses it for comments).
func validEntity[T string | []byte](b T) bool {
	if len(b) == 0 || b[0] == '#' {
		return false
	}
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case ' ', '\t', '\n', '\v', '\f', '\r':
			return false
		}
	}
	return true
}

// parseSeq parses 1 to 19 decimal digits with a value of at most MaxSeq. No sign, no
// spaces: the formats are machine-written and anything else is corruption.
func parseSeq(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 19 {
		return 0, false
	}
	var v int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0') // v <= MaxSeq before this digit, so no overflow
		if v > MaxSeq {
			return 0, false
		}
	}
	return v, true
}

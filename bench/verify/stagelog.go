package verify

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
)

// stageLogBuffer is the write buffer of a StageLog: at ~20 bytes a line it holds about
// 13k lines, so 50k lines/s costs a handful of write syscalls per second.
const stageLogBuffer = 256 << 10

// StageLog is the observation log of one stage: one `entity seq` line per received
// message. It is safe for concurrent use; lines are buffered and reach the file at the
// latest on Close. Each line is written whole under the lock, so lines of concurrent
// Records never interleave.
type StageLog struct {
	path string

	mu      sync.Mutex
	f       *os.File
	w       *bufio.Writer
	scratch []byte
	err     error // first invalid Record; reported by Close
	closed  bool
}

// NewStageLog creates (or truncates) the stage log at path.
func NewStageLog(path string) (*StageLog, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("verify: %w", err)
	}
	return &StageLog{path: path, f: f, w: bufio.NewWriterSize(f, stageLogBuffer), scratch: make([]byte, 0, 32)}, nil
}

// Record appends one received message. An entity id or sequence the log format cannot
// carry is not written; the first such error is returned by Close, so a run that
// recorded garbage cannot end quietly. Records after Close are dropped: callers stop
// their consumers before closing, and a dropped line can only make the verdict stricter
// (a missing line shows up as a gap or as in flight, never hides one).
func (l *StageLog) Record(entity string, seq int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	if !validEntity(entity) || seq < 0 || seq > MaxSeq {
		if l.err == nil {
			l.err = fmt.Errorf("verify: %s: cannot record entity %q seq %d", l.path, entity, seq)
		}
		return
	}
	l.scratch = append(l.scratch[:0], entity...)
	l.scratch = append(l.scratch, ' ')
	l.scratch = strconv.AppendInt(l.scratch, seq, 10)
	l.scratch = append(l.scratch, '\n')
	// A write error is sticky in bufio.Writer and surfaces from Flush in Close.
	_, _ = l.w.Write(l.scratch)
}

// Close flushes and closes the file. It returns the first invalid Record, a write error,
// or the close error. Closing twice returns an error.
func (l *StageLog) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return fmt.Errorf("verify: %s: %w", l.path, os.ErrClosed)
	}
	l.closed = true
	errFlush := l.w.Flush()
	errClose := l.f.Close()
	if err := errors.Join(errFlush, errClose); err != nil {
		return errors.Join(l.err, fmt.Errorf("verify: %s: %w", l.path, err))
	}
	return l.err
}

// parseLine parses one stage log line without its LF: exactly `entity SP seq`.
func parseLine(line []byte) (entity []byte, seq int64, err error) {
	sp := bytes.IndexByte(line, ' ')
	if sp < 0 {
		return nil, 0, errors.New(`want "entity seq", found no space`)
	}
	entity = line[:sp]
	if !validEntity(entity) {
		return nil, 0, fmt.Errorf("invalid entity id %q", entity)
	}
	seq, ok := parseSeq(line[sp+1:])
	if !ok {
		return nil, 0, fmt.Errorf("invalid sequence %q (want 1-19 digits, at most %d)", line[sp+1:], int64(MaxSeq))
	}
	return entity, seq, nil
}

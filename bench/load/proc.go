package load

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"
)

// The CPU readings of processes on this machine, from /proc (Linux): how much CPU the
// PostgreSQL serving the broker spends, which no HTTP endpoint tells. They only work when
// queen-bench runs on the database's machine.

// procStat holds the fields of /proc/<pid>/stat the tool reads; times are clock ticks.
type procStat struct {
	comm                         string
	ppid                         int
	utime, stime, cutime, cstime uint64
}

// parseProcStat reads one /proc/<pid>/stat line. The command name is in parentheses and
// may itself hold spaces and parentheses, so the fields are counted from the last ')'.
func parseProcStat(line []byte) (procStat, error) {
	open, closing := bytes.IndexByte(line, '('), bytes.LastIndexByte(line, ')')
	if open < 0 || closing < open {
		return procStat{}, fmt.Errorf("proc stat %.60q: no command name", line)
	}
	f := bytes.Fields(line[closing+1:])
	// f[0] is field 3 (state): field n is f[n-3]. ppid is 4, utime..cstime 14..17.
	if len(f) < 15 {
		return procStat{}, fmt.Errorf("proc stat %.60q: %d fields", line, len(f)+2)
	}
	num := func(i int) (uint64, error) { return strconv.ParseUint(string(f[i]), 10, 64) }
	ppid, err := strconv.Atoi(string(f[1]))
	if err != nil {
		return procStat{}, fmt.Errorf("proc stat: ppid %q", f[1])
	}
	st := procStat{comm: string(line[open+1 : closing]), ppid: ppid}
	for i, dst := range []*uint64{&st.utime, &st.stime, &st.cutime, &st.cstime} {
		if *dst, err = num(11 + i); err != nil {
			return procStat{}, fmt.Errorf("proc stat: field %d %q", 14+i, f[11+i])
		}
	}
	return st, nil
}

func readProcStat(pid int) (procStat, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procStat{}, err
	}
	return parseProcStat(b)
}

// clockTicks is the kernel's USER_HZ, the unit of /proc/<pid>/stat times. It is read from
// the auxiliary vector (AT_CLKTCK), which is what sysconf(_SC_CLK_TCK) returns; 100, the
// value on every mainstream Linux build, when it cannot be read.
var clockTicks = sync.OnceValue(func() float64 {
	b, err := os.ReadFile("/proc/self/auxv")
	if err != nil {
		return 100
	}
	if hz, ok := auxvValue(b, strconv.IntSize/8, 17); ok && hz > 0 { // 17 = AT_CLKTCK
		return float64(hz)
	}
	return 100
})

// auxvValue returns the value of key in an auxiliary vector of word-sized (key, value)
// pairs in the machine's byte order.
func auxvValue(b []byte, word int, key uint64) (uint64, bool) {
	read := func(p []byte) uint64 {
		if word == 4 {
			return uint64(binary.NativeEndian.Uint32(p))
		}
		return binary.NativeEndian.Uint64(p)
	}
	for i := 0; i+2*word <= len(b); i += 2 * word {
		k := read(b[i:])
		if k == 0 { // AT_NULL ends the vector
			break
		}
		if k == key {
			return read(b[i+word:]), true
		}
	}
	return 0, false
}

func ticks(n uint64) time.Duration {
	return time.Duration(float64(n) / clockTicks() * float64(time.Second))
}

// ProcessCPU is the user + system CPU one process has used so far.
func ProcessCPU(pid int) (time.Duration, error) {
	st, err := readProcStat(pid)
	if err != nil {
		return 0, err
	}
	return ticks(st.utime + st.stime), nil
}

// ProcessRSS is one process's resident set size in bytes (/proc/<pid>/statm).
func ProcessRSS(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/statm", pid))
	if err != nil {
		return 0, err
	}
	f := bytes.Fields(b)
	if len(f) < 2 {
		return 0, fmt.Errorf("proc statm %q", b)
	}
	pages, err := strconv.ParseUint(string(f[1]), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("proc statm %q", b)
	}
	return float64(pages) * float64(os.Getpagesize()), nil
}

// ClusterCPU is the CPU a PostgreSQL cluster has used so far: its postmaster's own, that
// of its children that have exited (the postmaster reaps its backends, so the kernel adds
// their time to its cutime and cstime), and that of its living children (backends,
// checkpointer, WAL writer, autovacuum, ...). A backend that exits between two readings
// moves from the second sum to the first, so the difference of two readings is the
// cluster's CPU in between. It fails when postmaster is not a postgres process.
func ClusterCPU(postmaster int) (time.Duration, error) {
	pm, err := readProcStat(postmaster)
	if err != nil {
		return 0, fmt.Errorf("postmaster %d: %w", postmaster, err)
	}
	if pm.comm != "postgres" {
		return 0, fmt.Errorf("process %d is %q, not a PostgreSQL postmaster", postmaster, pm.comm)
	}
	total := pm.utime + pm.stime + pm.cutime + pm.cstime
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == postmaster {
			continue
		}
		st, err := readProcStat(pid)
		if err != nil || st.ppid != postmaster {
			continue // gone meanwhile, or not the cluster's
		}
		total += st.utime + st.stime + st.cutime + st.cstime
	}
	return ticks(total), nil
}

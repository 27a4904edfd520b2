package process

import (
	"bytes"
	"os"
	"runtime/metrics"
	"strconv"
)

// Memory reads the resident and virtual size from /proc/self/statm (Linux: the
// first two fields, in pages); elsewhere it falls back on the Go runtime's view, which
// misses memory mapped outside it.
func Memory() (rss, virtual int64) {
	if b, err := os.ReadFile("/proc/self/statm"); err == nil {
		f := bytes.Fields(b)
		if len(f) >= 2 {
			size, err1 := strconv.ParseInt(string(f[0]), 10, 64)
			res, err2 := strconv.ParseInt(string(f[1]), 10, 64)
			if err1 == nil && err2 == nil {
				page := int64(os.Getpagesize())
				return res * page, size * page
			}
		}
	}
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	total, released := int64(s[0].Value.Uint64()), int64(s[1].Value.Uint64())
	return total - released, total
}

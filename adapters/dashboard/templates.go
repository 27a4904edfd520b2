package dashboard

import (
	"fmt"
	"html/template"
	"strconv"
	"strings"
	"time"
)

// funcs are the templates' formatting functions. Times are shown in UTC with their
// machine-readable form in <time datetime>.
var funcs = template.FuncMap{
	"when":      when,
	"whenp":     func(t *time.Time) template.HTML { return whenPtr(t) },
	"dur":       duration,
	"num":       number,
	"bytes":     byteSize,
	"queueHref": queuePath,
	"msgHref":   messageHref,
	"text":      func(s *string) string { return deref(s) },
	"add":       func(a, b int) int { return a + b },
	"rate":      func(v float64) string { return trimFloat(v, 2) },
	"pct":       func(v float64) string { return trimFloat(v, 1) + " %" },
	"bytesf":    func(v float64) string { return byteSize(int64(v)) },
}

func when(t time.Time) template.HTML {
	if t.IsZero() {
		return "–"
	}
	u := t.UTC()
	return template.HTML(fmt.Sprintf(`<time datetime="%s">%s</time>`, u.Format(time.RFC3339Nano),
		template.HTMLEscapeString(u.Format("2006-01-02 15:04:05Z"))))
}

func whenPtr(t *time.Time) template.HTML {
	if t == nil {
		return "–"
	}
	return when(*t)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// duration formats d for people: "850 ms", "12 s", "3 min 12 s", "5 h 3 min", "2 d 4 h".
func duration(d time.Duration) string {
	switch {
	case d <= 0:
		return "0"
	case d < time.Second:
		return strconv.FormatInt(d.Milliseconds(), 10) + " ms"
	case d < time.Minute:
		return strconv.FormatInt(int64(d/time.Second), 10) + " s"
	case d < time.Hour:
		return fmt.Sprintf("%d min %d s", d/time.Minute, d%time.Minute/time.Second)
	case d < 24*time.Hour:
		return fmt.Sprintf("%d h %d min", d/time.Hour, d%time.Hour/time.Minute)
	default:
		return fmt.Sprintf("%d d %d h", d/(24*time.Hour), d%(24*time.Hour)/time.Hour)
	}
}

// number formats an integer with thousands separators: 1234567 as "1,234,567".
func number(v any) string {
	var n int64
	switch x := v.(type) {
	case int:
		n = int64(x)
	case int64:
		n = x
	case uint64:
		n = int64(x) // counts, far below 2^63
	default:
		return fmt.Sprint(v)
	}
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// byteSize formats a byte count in binary units: "512 B", "1.5 KiB", "3.2 MiB".
func byteSize(n int64) string {
	const unit = 1024
	if n < unit {
		return strconv.FormatInt(n, 10) + " B"
	}
	v, i := float64(n), -1
	for v >= unit && i < 4 {
		v /= unit
		i++
	}
	return trimFloat(v, 1) + " " + []string{"KiB", "MiB", "GiB", "TiB", "PiB"}[i]
}

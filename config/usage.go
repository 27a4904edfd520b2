package config

import (
	"fmt"
	"io"
	"reflect"
	"strings"
)

// sections lists the Usage sections in display order.
var sections = []string{"Server", "Database", "Push path", "Pop path", "Hot-list", "Spool", "Retention", "Metrics", "Authentication", "Logging"}

// want describes the values a field accepts; it is used both in errors and
// in Usage.
func want(f reflect.StructField) string {
	switch {
	case f.Type == durationType:
		return "a whole number of milliseconds" + rangeText(f)
	case f.Type.Kind() == reflect.Bool:
		return "a boolean (true/false, 1/0, yes/no, on/off)"
	case f.Type.Kind() == reflect.Int || f.Type.Kind() == reflect.Int64:
		return "an integer" + rangeText(f)
	case f.Type.Kind() == reflect.Float64:
		return "a number" + rangeText(f)
	}
	if list := f.Tag.Get("oneof"); list != "" {
		return "one of " + strings.ReplaceAll(list, ",", ", ")
	}
	if name := f.Tag.Get("check"); name != "" {
		return checks[name].want
	}
	return anyString
}

// anyString is what want says of an unconstrained string field.
const anyString = "a string"

func rangeText(f reflect.StructField) string {
	lo, hasLo := tagInt(f, "min")
	hi, hasHi := tagInt(f, "max")
	switch {
	case hasLo && hasHi:
		return fmt.Sprintf(" between %d and %d", lo, hi)
	case hasLo && lo == 1:
		return " greater than 0"
	case hasLo && lo == 0:
		return ", 0 or more"
	case hasLo:
		return fmt.Sprintf(" of at least %d", lo)
	case hasHi:
		return fmt.Sprintf(" of at most %d", hi)
	}
	return ""
}

// Usage writes the description of every variable, grouped by section, as
// shown by `queen-server --help`.
func Usage(w io.Writer) {
	fields := configFields()
	order := append([]string(nil), sections...)
	known := map[string]bool{}
	for _, s := range order {
		known[s] = true
	}
	for _, f := range fields {
		if s := f.Tag.Get("section"); !known[s] {
			known[s] = true
			order = append(order, s)
		}
	}

	names := make(map[string]string, len(fields))
	width := 0
	for _, f := range fields {
		n := f.Tag.Get("env")
		if a := f.Tag.Get("alias"); a != "" {
			n += " (or " + a + ")"
		}
		names[f.Name] = n
		width = max(width, len(n))
	}

	var b strings.Builder
	b.WriteString("queen-server reads its configuration from these environment variables (unset or empty means the default):\n")
	for _, s := range order {
		fmt.Fprintf(&b, "\n%s:\n", s)
		for _, f := range fields {
			if f.Tag.Get("section") != s {
				continue
			}
			fmt.Fprintf(&b, "  %-*s  default: %s\n", width, names[f.Name], defaultText(f))
			text := f.Tag.Get("help")
			if wt := want(f); wt != anyString {
				text += " Accepts " + wt + "."
			}
			for _, line := range wrap(text, 72) {
				b.WriteString("      " + line + "\n")
			}
		}
	}
	_, _ = io.WriteString(w, b.String())
}

func defaultText(f reflect.StructField) string {
	d := f.Tag.Get("envDefault")
	switch {
	case d == "":
		d = "(empty)"
	case f.Type == durationType:
		d += " ms"
	}
	if from := f.Tag.Get("defaultFrom"); from != "" {
		d = "$" + from + ", else " + d
	}
	return d
}

// wrap splits text into lines of at most width characters where possible.
func wrap(text string, width int) []string {
	var lines []string
	var cur strings.Builder
	for _, word := range strings.Fields(text) {
		if cur.Len() > 0 && cur.Len()+1+len(word) > width {
			lines = append(lines, cur.String())
			cur.Reset()
		}
		if cur.Len() > 0 {
			cur.WriteByte(' ')
		}
		cur.WriteString(word)
	}
	if cur.Len() > 0 {
		lines = append(lines, cur.String())
	}
	return lines
}

package config

import (
	"fmt"
	"log/slog"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// Variable describes one environment variable of Config, from its struct tags: what
// `--help` lists and what deployment manifests are checked against (deploy/).
type Variable struct {
	Name    string   // e.g. "PORT"
	Aliases []string // read when Name is unset, e.g. RUST_LOG for LOG_LEVEL
	Default string   // as written in the environment ("" when empty); durations in ms
	Section string   // the --help section
	Help    string   // one paragraph of meaning
	Secret  bool     // never printed: passwords, keys, connection URLs
}

// Variables lists every variable Config reads, in declaration order.
func Variables() []Variable {
	fields := configFields()
	out := make([]Variable, 0, len(fields))
	for _, f := range fields {
		v := Variable{
			Name:    f.Tag.Get("env"),
			Default: f.Tag.Get("envDefault"),
			Section: f.Tag.Get("section"),
			Help:    f.Tag.Get("help"),
			Secret:  isSecret(f),
		}
		if a := f.Tag.Get("alias"); a != "" {
			v.Aliases = []string{a}
		}
		out = append(out, v)
	}
	return out
}

// LogValue makes a Config log as the effective configuration: one attribute per
// variable, named by it, with the value in effect (durations in milliseconds, as they
// are set) and secret values redacted, so that the start-up line says what the broker
// really runs with.
func (c Config) LogValue() slog.Value {
	fields := configFields()
	attrs := make([]slog.Attr, 0, len(fields))
	v := reflect.ValueOf(c)
	for _, f := range fields {
		attrs = append(attrs, slog.Any(f.Tag.Get("env"), effectiveValue(f, v.FieldByIndex(f.Index))))
	}
	return slog.GroupValue(attrs...)
}

// effectiveValue is one field's value as LogValue shows it.
func effectiveValue(f reflect.StructField, fv reflect.Value) any {
	if isSecret(f) {
		if fv.String() == "" {
			return ""
		}
		if f.Tag.Get("check") == "pgurls" {
			var shown []string
			for _, u := range splitURLs(fv.String()) {
				shown = append(shown, redact(u, func(s string) string { return s }))
			}
			return strings.Join(shown, " ")
		}
		return redact(fv.String(), func(s string) string { return s })
	}
	switch {
	case f.Type == durationType:
		return int64(fv.Interface().(time.Duration) / time.Millisecond)
	case fv.Kind() == reflect.Slice:
		parts := make([]string, fv.Len())
		for i := range parts {
			parts[i] = fmt.Sprint(fv.Index(i).Interface())
		}
		return strings.Join(parts, ",")
	case fv.Kind() == reflect.Float64:
		return strconv.FormatFloat(fv.Float(), 'g', -1, 64)
	}
	return fv.Interface()
}

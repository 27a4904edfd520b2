package config

import (
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"net/url"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/caarlos0/env/v11"

	"github.com/queen-go/queen/core/auth"
)

// FieldError reports one invalid variable.
type FieldError struct {
	Var    string // the variable that was read (an alias when it supplied the value)
	Value  string // the value as given
	Want   string // what is expected, e.g. "an integer between 1 and 256"
	Secret bool   // Value is sensitive and is not printed by Error
}

func (e *FieldError) Error() string {
	return fmt.Sprintf("config: %s=%s: want %s", e.Var, e.shownValue(), e.Want)
}

func (e *FieldError) shownValue() string {
	if !e.Secret {
		return strconv.Quote(e.Value)
	}
	return redact(e.Value, strconv.Quote)
}

// redact shows a secret value: a URL with its password masked (through quote), anything
// else as its length only.
func redact(v string, quote func(string) string) string {
	if u, err := url.Parse(v); err == nil && u.Scheme != "" && u.Host != "" {
		return quote(u.Redacted())
	}
	return fmt.Sprintf("<%d characters, not shown>", len(v))
}

// isSecret reports whether f's value must never be printed: a secret tag, or a check
// whose values are secret (keys, connection URLs).
func isSecret(f reflect.StructField) bool {
	return f.Tag.Get("secret") == "true" || checks[f.Tag.Get("check")].secret
}

// check is a validation rule for string fields, named by a check tag.
type check struct {
	want   string
	secret bool
	valid  func(string) bool
}

var checks = map[string]check{
	"aes256key": {
		want:   "64 hex characters (a 256-bit AES key)",
		secret: true,
		valid: func(v string) bool {
			b, err := hex.DecodeString(v)
			return err == nil && len(b) == 32
		},
	},
	"httpurl": {
		want: "an http:// or https:// URL",
		valid: func(v string) bool {
			u, err := url.Parse(v)
			return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
		},
	},
	"pgurls": {
		want:   "postgres:// or postgresql:// URLs separated by spaces (or by commas before each scheme)",
		secret: true,
		valid: func(v string) bool {
			urls := splitURLs(v)
			for _, u := range urls {
				if !hasPGScheme(u) {
					return false
				}
				if _, err := url.Parse(u); err != nil {
					return false
				}
			}
			return len(urls) > 0
		},
	},
	"pgurl": {
		want:   "a postgres:// or postgresql:// URL, or a key=value connection string",
		secret: true,
		valid: func(v string) bool {
			if strings.Contains(v, "://") {
				u, err := url.Parse(v)
				return err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql")
			}
			return strings.Contains(v, "=")
		},
	},
}

// Load reads the configuration from the process environment.
func Load() (Config, error) {
	return Parse(Environ(os.Environ()))
}

// Environ turns a process environment ("KEY=value" strings) into the map Parse reads.
func Environ(list []string) map[string]string { return env.ToMap(list) }

// Parse reads the configuration from environ, a map of variable names to
// values. On failure it returns a zero Config and every problem found,
// joined with errors.Join; each is a *FieldError or, for bounds that relate
// two variables (push limits, Vegas alpha/beta), names all of them.
func Parse(environ map[string]string) (Config, error) {
	fields := configFields()

	// Resolve aliases and environment-derived defaults into the primary
	// names, remembering which variable actually supplied each value.
	effective := make(map[string]string, len(environ))
	for k, v := range environ {
		effective[k] = v
	}
	source := map[string]string{}
	var cfg Config
	for _, f := range fields {
		name := f.Tag.Get("env")
		if effective[name] != "" {
			if f.Tag.Get("conn") == "part" {
				cfg.pgPartsSet = true
			}
			continue
		}
		if alias := f.Tag.Get("alias"); alias != "" && environ[alias] != "" {
			v := environ[alias]
			if f.Tag.Get("aliasIfValid") == "" || validateString(f, v) == nil {
				effective[name] = v
				source[name] = alias
				if f.Tag.Get("conn") == "part" {
					cfg.pgPartsSet = true
				}
				continue
			}
		}
		if from := f.Tag.Get("defaultFrom"); from != "" && environ[from] != "" {
			effective[name] = environ[from]
			source[name] = from
		}
	}

	parseErr := env.ParseWithOptions(&cfg, env.Options{
		Environment: effective,
		FuncMap: map[reflect.Type]env.ParserFunc{
			durationType: parseMillis,
			boolType:     parseBool,
		},
	})

	failed := map[string]bool{} // field names the library could not parse
	var errs []error
	if parseErr != nil {
		var agg env.AggregateError
		if !errors.As(parseErr, &agg) {
			return Config{}, fmt.Errorf("config: %w", parseErr)
		}
		for _, e := range agg.Errors {
			var pe env.ParseError
			if !errors.As(e, &pe) {
				errs = append(errs, fmt.Errorf("config: %w", e))
				continue
			}
			failed[pe.Name] = true
		}
	}

	v := reflect.ValueOf(&cfg).Elem()
	for _, f := range fields {
		name := f.Tag.Get("env")
		fieldErr := func() error {
			varName := name
			if s, ok := source[name]; ok {
				varName = s
			}
			return &FieldError{
				Var:    varName,
				Value:  effective[name],
				Want:   want(f),
				Secret: isSecret(f),
			}
		}
		if failed[f.Name] {
			errs = append(errs, fieldErr())
			continue
		}
		fv := v.FieldByIndex(f.Index)
		switch {
		case f.Type == durationType:
			if !inRange(f, int64(fv.Interface().(time.Duration)/time.Millisecond)) {
				errs = append(errs, fieldErr())
			}
		case fv.Kind() == reflect.Int || fv.Kind() == reflect.Int64:
			if !inRange(f, fv.Int()) {
				errs = append(errs, fieldErr())
			}
		case fv.Kind() == reflect.Float64:
			if x := fv.Float(); math.IsNaN(x) || !inRangeFloat(f, x) {
				errs = append(errs, fieldErr())
			}
		case fv.Kind() == reflect.String:
			if err := validateString(f, fv.String()); err != nil {
				errs = append(errs, fieldErr())
			} else if f.Tag.Get("oneof") != "" {
				fv.SetString(oneofSpelling(f, fv.String()))
			}
		}
	}

	// Relations between variables, checked only when both sides parsed.
	ok := func(names ...string) bool {
		for _, n := range names {
			if failed[n] {
				return false
			}
		}
		return true
	}
	if ok("PushLimitMin", "PushLimitInit", "PushLimitMax") &&
		(cfg.PushLimitMin > cfg.PushLimitInit || cfg.PushLimitInit > cfg.PushLimitMax) {
		errs = append(errs, fmt.Errorf("config: %s=%d, %s=%d, %s=%d: want %[1]s <= %[3]s <= %[5]s",
			envName("PushLimitMin"), cfg.PushLimitMin,
			envName("PushLimitInit"), cfg.PushLimitInit,
			envName("PushLimitMax"), cfg.PushLimitMax))
	}
	if ok("VegasAlpha", "VegasBeta") && cfg.VegasAlpha >= cfg.VegasBeta {
		errs = append(errs, fmt.Errorf("config: %s=%d, %s=%d: want %[1]s < %[3]s",
			envName("VegasAlpha"), cfg.VegasAlpha,
			envName("VegasBeta"), cfg.VegasBeta))
	}
	if cfg.EncryptionKeyOld != "" && cfg.EncryptionKey == "" {
		// The old key only decrypts: without a current key nothing could be sealed, and
		// pushes to encrypted queues would all be refused. Surely a mistake.
		errs = append(errs, fmt.Errorf("config: %s is set but %s is not: the old key only decrypts; set the current key too",
			envName("EncryptionKeyOld"), envName("EncryptionKey")))
	}

	if ok("JWTEnabled", "JWTAlgorithm") && cfg.JWTEnabled {
		if err := cfg.jwtKeyMaterial(); err != nil {
			errs = append(errs, err)
		}
	}

	if environ[envName("LogFormat")] == "" && environ[envName("LogJSON")] != "" && ok("LogJSON") && !cfg.LogJSON {
		cfg.LogFormat = "text" // Queen's QUEEN_LOG_JSON=false, with no LOG_FORMAT to overrule it
	}

	errs = append(errs, cfg.checkShards(ok("ShardsOpen"))...)

	if len(errs) > 0 {
		// A value inherited through defaultFrom fails with its source variable: report
		// that variable once.
		seen := make(map[string]bool, len(errs))
		errs = slices.DeleteFunc(errs, func(e error) bool {
			dup := seen[e.Error()]
			seen[e.Error()] = true
			return dup
		})
		return Config{}, errors.Join(errs...)
	}
	return cfg, nil
}

// checkShards checks QUEEN_SHARDS against the single-database variables and
// QUEEN_SHARDS_OPEN against QUEEN_SHARDS.
func (c Config) checkShards(openParsed bool) []error {
	var errs []error
	n := len(c.ShardURLs())
	if n > 0 && (c.PGURL != "" || c.pgPartsSet) {
		errs = append(errs, fmt.Errorf("config: %s is set, and so is %s or a PG_* part: set the shards' URLs in %[1]s only (its first is the database %[2]s would name)",
			envName("Shards"), envName("PGURL")))
	}
	if !openParsed || len(c.ShardsOpen) == 0 {
		return errs
	}
	if n < 2 {
		return append(errs, fmt.Errorf("config: %s is set but %s names fewer than two shards", envName("ShardsOpen"), envName("Shards")))
	}
	for _, i := range c.ShardsOpen {
		if i < 0 || i >= n {
			errs = append(errs, fmt.Errorf("config: %s=%v: want indexes of %s, 0 to %d", envName("ShardsOpen"),
				c.ShardsOpen, envName("Shards"), n-1))
			break
		}
	}
	return errs
}

// jwtKeyMaterial checks that the token algorithm has something to check tokens with:
// the broker must not start with authentication on and no key (docs/api.md §3). The rule
// is auth's (auth.Usable); this names the variables that would satisfy it.
func (c Config) jwtKeyMaterial() error {
	have := auth.KeyMaterial{Secret: c.JWTSecret != "", PublicKey: c.JWTPublicKey != "", KeySet: c.JWTJWKSURL != ""}
	var missing *auth.MissingKeyError
	if err := auth.CheckKeyMaterial(c.JWTAlgorithm, have); !errors.As(err, &missing) {
		return nil // JWT_ALGORITHM is one of the algorithms auth knows (its oneof tag)
	}
	return fmt.Errorf("config: JWT_ENABLED=true, %s=%s: want %s", envName("JWTAlgorithm"), c.JWTAlgorithm,
		missing.Want.Either(envName("JWTSecret"), envName("JWTPublicKey"), envName("JWTJWKSURL")))
}

// oneofSpelling returns the entry of f's oneof list that v matches case-insensitively:
// the list's spelling is the value's (debug, EdDSA).
func oneofSpelling(f reflect.StructField, v string) string {
	for _, w := range strings.Split(f.Tag.Get("oneof"), ",") {
		if strings.EqualFold(v, w) {
			return w
		}
	}
	return v
}

// parseMillis parses a whole number of milliseconds.
func parseMillis(v string) (any, error) {
	ms, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return nil, err
	}
	if ms > math.MaxInt64/int64(time.Millisecond) || ms < math.MinInt64/int64(time.Millisecond) {
		return nil, strconv.ErrRange
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// parseBool accepts true/false, 1/0, yes/no and on/off in any case.
func parseBool(v string) (any, error) {
	switch strings.ToLower(v) {
	case "true", "1", "yes", "on":
		return true, nil
	case "false", "0", "no", "off":
		return false, nil
	}
	return nil, fmt.Errorf("invalid boolean %q", v)
}

// validateString applies the oneof and check tags of a string field.
func validateString(f reflect.StructField, v string) error {
	if list := f.Tag.Get("oneof"); list != "" {
		for _, w := range strings.Split(list, ",") {
			if strings.EqualFold(v, w) {
				return nil
			}
		}
		return errors.New("not allowed")
	}
	if name := f.Tag.Get("check"); name != "" && v != "" {
		c, ok := checks[name]
		if !ok {
			panic("config: unknown check " + name)
		}
		if !c.valid(v) {
			return errors.New("invalid")
		}
	}
	return nil
}

// inRange applies the min and max tags of a numeric field.
func inRange(f reflect.StructField, n int64) bool {
	if lo, ok := tagInt(f, "min"); ok && n < lo {
		return false
	}
	if hi, ok := tagInt(f, "max"); ok && n > hi {
		return false
	}
	return true
}

// inRangeFloat applies the min and max tags of a float field.
func inRangeFloat(f reflect.StructField, x float64) bool {
	if lo, ok := tagInt(f, "min"); ok && x < float64(lo) {
		return false
	}
	if hi, ok := tagInt(f, "max"); ok && x > float64(hi) {
		return false
	}
	return true
}

func tagInt(f reflect.StructField, key string) (int64, bool) {
	s, ok := f.Tag.Lookup(key)
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		panic(fmt.Sprintf("config: field %s: bad %s tag %q", f.Name, key, s))
	}
	return n, true
}

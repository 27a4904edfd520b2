package config

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
)

func TestVariables(t *testing.T) {
	t.Parallel()
	vars := Variables()
	byName := map[string]Variable{}
	for _, v := range vars {
		if _, dup := byName[v.Name]; dup {
			t.Errorf("%s listed twice", v.Name)
		}
		if v.Help == "" || v.Section == "" {
			t.Errorf("%s: no help or section", v.Name)
		}
		byName[v.Name] = v
	}
	for _, tc := range []struct {
		name, def string
		aliases   []string
		secret    bool
	}{
		{name: "PORT", def: "6632"},
		{name: "LOG_FORMAT", def: "json"},
		{name: "LOG_LEVEL", def: "info", aliases: []string{"RUST_LOG"}},
		{name: "DB_STATEMENT_TIMEOUT", def: "30000", aliases: []string{"QUEEN_STMT_TIMEOUT_MS"}},
		{name: "QUEEN_PG_URL", secret: true},
		{name: "PG_PASSWORD", def: "postgres", secret: true},
		{name: "JWT_SECRET", secret: true},
		{name: "QUEEN_ENCRYPTION_KEY", secret: true},
		{name: "QUEEN_ACCESS_LOG", def: "false"},
	} {
		v, ok := byName[tc.name]
		if !ok {
			t.Errorf("%s not listed", tc.name)
			continue
		}
		if v.Default != tc.def || v.Secret != tc.secret || strings.Join(v.Aliases, ",") != strings.Join(tc.aliases, ",") {
			t.Errorf("%s: %+v, want default %q, aliases %v, secret %v", tc.name, v, tc.def, tc.aliases, tc.secret)
		}
	}
}

// TestLogValueRedactsSecrets: the start-up line shows every variable with its effective
// value, and no secret.
func TestLogValueRedactsSecrets(t *testing.T) {
	t.Parallel()
	cfg, err := Parse(map[string]string{
		"QUEEN_PG_URL":         "postgres://queen:hunter2@db:5432/q",
		"PG_PASSWORD":          "swordfish",
		"JWT_SECRET":           "s3cr3t-s3cr3t-s3cr3t-s3cr3t-s3cr3t",
		"QUEEN_ENCRYPTION_KEY": validKey,
		"DB_STATEMENT_TIMEOUT": "1500",
		"JWT_SKIP_PATHS":       "/health,/ready",
	})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	slog.New(slog.NewJSONHandler(&b, nil)).Info("start", "config", cfg)
	line := b.String()
	for _, secret := range []string{"hunter2", "swordfish", "s3cr3t", validKey} {
		if strings.Contains(line, secret) {
			t.Errorf("the line shows the secret %q: %s", secret, line)
		}
	}
	var got struct{ Config map[string]any }
	if err := json.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Config) != len(Variables()) {
		t.Errorf("%d variables logged, want %d", len(got.Config), len(Variables()))
	}
	for name, want := range map[string]any{
		"QUEEN_PG_URL":         "postgres://queen:xxxxx@db:5432/q",
		"PG_PASSWORD":          "<9 characters, not shown>",
		"DB_STATEMENT_TIMEOUT": float64(1500),
		"JWT_SKIP_PATHS":       "/health,/ready",
		"PORT":                 float64(6632),
		"QUEEN_APPLY_SCHEMA":   true,
	} {
		if got.Config[name] != want {
			t.Errorf("%s logged as %#v, want %#v", name, got.Config[name], want)
		}
	}
}

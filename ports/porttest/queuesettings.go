package porttest

import (
	"context"
	"testing"

	"github.com/queen-go/queen/ports"
)

// QueueSettingsFixture is a fresh, empty ports.QueueSettings and the state it answers
// from: pushes create queues as a producer's would, Configure sets a queue's options.
type QueueSettingsFixture struct {
	Settings ports.QueueSettings
	Segments ports.SegmentStore
	// Configure creates the queue cfg.Name when needed and sets every option to cfg's
	// value, marking the queue configured (as a replace-mode /api/v1/configure does).
	Configure func(t *testing.T, tenant string, cfg ports.QueueConfig)
}

// QueueSettings runs the conformance suite of ports.QueueSettings; newFixture must
// return an empty state of its own on every call.
func QueueSettings(t *testing.T, newFixture func(t *testing.T) QueueSettingsFixture) {
	tests := []struct {
		name string
		run  func(t *testing.T, f QueueSettingsFixture)
	}{
		{"a queue that does not exist does not encrypt", testSettingsUnknown},
		{"a queue a push created does not encrypt", testSettingsPushed},
		{"the flag follows every configuration", testSettingsFollows},
		{"tenants and names are apart", testSettingsApart},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.run(t, newFixture(t))
		})
	}
}

// wantEncrypts fails the test unless tenant's queue answers want.
func wantEncrypts(t *testing.T, f QueueSettingsFixture, tenant, queue string, want bool) {
	t.Helper()
	got, err := f.Settings.EncryptionEnabled(context.Background(), tenant, queue)
	if err != nil {
		t.Fatalf("EncryptionEnabled(%s, %q): %v", tenant, queue, err)
	}
	if got != want {
		t.Fatalf("EncryptionEnabled(%s, %q) = %v, want %v", tenant, queue, got, want)
	}
}

func encrypted(on bool) func(*ports.QueueConfig) {
	return func(c *ports.QueueConfig) { c.EncryptionEnabled = on }
}

func testSettingsUnknown(t *testing.T, f QueueSettingsFixture) {
	wantEncrypts(t, f, tenant, "nowhere", false)
	wantEncrypts(t, f, otherTenant, "nowhere", false)
}

func testSettingsPushed(t *testing.T, f QueueSettingsFixture) {
	push(t, f.Segments, seg("pushed", "p", "m0"))
	wantEncrypts(t, f, tenant, "pushed", false)
	// Configuring it later sets the flag on the queue the push created.
	f.Configure(t, tenant, queueConfig("pushed", encrypted(true)))
	wantEncrypts(t, f, tenant, "pushed", true)
}

func testSettingsFollows(t *testing.T, f QueueSettingsFixture) {
	f.Configure(t, tenant, queueConfig("q", nil))
	wantEncrypts(t, f, tenant, "q", false)
	for _, on := range []bool{true, false, true} {
		f.Configure(t, tenant, queueConfig("q", encrypted(on)))
		wantEncrypts(t, f, tenant, "q", on)
	}
}

func testSettingsApart(t *testing.T, f QueueSettingsFixture) {
	f.Configure(t, tenant, queueConfig("q", encrypted(true)))
	f.Configure(t, otherTenant, queueConfig("q", encrypted(false)))
	f.Configure(t, tenant, queueConfig("q.b", encrypted(false)))
	wantEncrypts(t, f, tenant, "q", true)
	wantEncrypts(t, f, otherTenant, "q", false)
	wantEncrypts(t, f, tenant, "q.b", false)
	for _, name := range []string{"Q", "q ", "q.", "qq"} {
		wantEncrypts(t, f, tenant, name, false)
	}
}

package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/queen-go/queen/ports"
)

const testSender = "0123456789abcdef"

// TestHintPayloads: what Publish sends parses back to the same hints, every payload fits
// under PostgreSQL's limit, the parts are numbered, and hints that cannot travel are left
// out and counted.
func TestHintPayloads(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", 127) // 254 bytes
	many := make([]ports.Hint, 500)
	for i := range many {
		many[i] = ports.Hint{Tenant: ports.DefaultTenant, Queue: long, Partition: fmt.Sprint(long, i),
			PartitionID: "0191d7a2-0000-7000-8000-000000000001"}
	}
	tests := []struct {
		name      string
		hints     []ports.Hint
		wantParts int // -1: more than one
		wantBad   int
	}{
		{"one hint", []ports.Hint{{Tenant: "t", Queue: "q", Partition: "p", PartitionID: "id"}}, 1, 0},
		{"empty fields", []ports.Hint{{Queue: "q"}}, 1, 0},
		{"many hints span several payloads", many, -1, 0},
		{"a newline, a separator, a NUL or invalid UTF-8 cannot travel", []ports.Hint{
			{Queue: "a\nb"}, {Queue: "ok"}, {Partition: "a\x1fb"}, {PartitionID: "a\x00"}, {Tenant: "\xff"},
		}, 1, 4},
		{"a hint longer than a payload cannot travel", []ports.Hint{{Queue: strings.Repeat("q", maxHintPayload)}, {Queue: "ok"}}, 1, 1},
		{"nothing to send", []ports.Hint{{Queue: "a\nb"}}, 0, 1},
		{"queue-level hints and commits in one batch", []ports.Hint{
			{Tenant: "t", Queue: "q", Kind: ports.HintQueueConfigured}, {Tenant: "t", Queue: "q", Partition: "p", PartitionID: "id"},
			{Tenant: "t", Queue: "gone", Kind: ports.HintQueueDeleted},
		}, 1, 0},
		{"an unknown kind cannot travel", []ports.Hint{{Queue: "q", Kind: 200}, {Queue: "ok", Kind: ports.HintQueueDeleted}}, 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			payloads, bad := encodeHints(testSender, 42, tt.hints)
			if bad != tt.wantBad {
				t.Fatalf("%d hints left out, want %d", bad, tt.wantBad)
			}
			if tt.wantParts >= 0 && len(payloads) != tt.wantParts || tt.wantParts < 0 && len(payloads) < 2 {
				t.Fatalf("%d payloads, want %d (-1: several)", len(payloads), tt.wantParts)
			}
			var got []ports.Hint
			for i, p := range payloads {
				if len(p) > maxHintPayload {
					t.Fatalf("payload %d is %d bytes, over PostgreSQL's limit", i, len(p))
				}
				hdr, hs, ok := decodeHints(p)
				if !ok || hdr != (hintHeader{sender: testSender, seq: 42, part: i + 1, parts: len(payloads)}) {
					t.Fatalf("payload %d: header %+v, ok %v", i, hdr, ok)
				}
				got = append(got, hs...)
			}
			var want []ports.Hint
			for _, h := range tt.hints {
				if hintFieldOK(h.Tenant) && hintFieldOK(h.Queue) && hintFieldOK(h.Partition) && hintFieldOK(h.PartitionID) &&
					len(h.Tenant+h.Queue+h.Partition+h.PartitionID) < maxHintPayload-hintHeaderMax && h.Kind <= ports.HintQueueDeleted {
					want = append(want, h)
				}
			}
			if !slices.Equal(got, want) {
				t.Fatalf("decoded %d hints, want %d", len(got), len(want))
			}
		})
	}
}

// TestHintPayloadsMalformed: a payload that does not follow the layout is refused whole.
func TestHintPayloadsMalformed(t *testing.T) {
	t.Parallel()
	good := "qh1\x1f" + testSender + "\x1f7\x1f1\x1f1\n"
	good2 := "qh2\x1f" + testSender + "\x1f7\x1f1\x1f1\n"
	tests := []struct{ name, payload string }{
		{"empty", ""},
		{"no header end", "qh1\x1f" + testSender + "\x1f7\x1f1\x1f1"},
		{"another format", "qh3\x1f" + testSender + "\x1f7\x1f1\x1f1\n"},
		{"a short sender", "qh1\x1fabc\x1f7\x1f1\x1f1\n"},
		{"a sender that is not hex", "qh1\x1f0123456789abcdeg\x1f7\x1f1\x1f1\n"},
		{"an upper-case sender", "qh1\x1f0123456789ABCDEF\x1f7\x1f1\x1f1\n"},
		{"a missing header field", "qh1\x1f" + testSender + "\x1f7\x1f1\n"},
		{"an extra header field", "qh1\x1f" + testSender + "\x1f7\x1f1\x1f1\x1f1\n"},
		{"a sequence that is not a number", "qh1\x1f" + testSender + "\x1fx\x1f1\x1f1\n"},
		{"part 0", "qh1\x1f" + testSender + "\x1f7\x1f0\x1f1\n"},
		{"part beyond parts", "qh1\x1f" + testSender + "\x1f7\x1f3\x1f2\n"},
		{"a negative part", "qh1\x1f" + testSender + "\x1f7\x1f-1\x1f2\n"},
		{"a hint of three fields", good + "t\x1fq\x1fp\n"},
		{"a hint of five fields", good + "t\x1fq\x1fp\x1fid\x1fx\n"},
		{"a cut last hint", good + "t\x1fq\x1fp\x1fid\nt\x1fq"},
		{"an empty line", good + "t\x1fq\x1fp\x1fid\n\n"},
		{"qh2: a hint of four fields", good2 + "t\x1fq\x1fp\x1fid\n"},
		{"qh2: a hint of six fields", good2 + "t\x1fq\x1f\x1f\x1fq\x1fq\n"},
		{"qh2: an unknown kind", good2 + "t\x1fq\x1f\x1f\x1fx\n"},
		{"qh2: an empty kind", good2 + "t\x1fq\x1f\x1f\x1f\n"},
		{"qh2: a kind of two letters", good2 + "t\x1fq\x1f\x1f\x1fqq\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if _, hs, ok := decodeHints(tt.payload); ok {
				t.Fatalf("%q parsed, into %v", tt.payload, hs)
			}
		})
	}
	if _, hs, ok := decodeHints(good + "t\x1fq\x1fp\x1f\n"); !ok || len(hs) != 1 || hs[0] != (ports.Hint{Tenant: "t", Queue: "q", Partition: "p"}) {
		t.Fatalf("a well-formed payload: %v, %v", hs, ok)
	}
	want := []ports.Hint{{Tenant: "t", Queue: "q", Kind: ports.HintQueueConfigured}, {Tenant: "t", Queue: "q", Kind: ports.HintQueueDeleted},
		{Tenant: "t", Queue: "q", Partition: "p", PartitionID: "id"}}
	if _, hs, ok := decodeHints(good2 + "t\x1fq\x1f\x1f\x1fq\nt\x1fq\x1f\x1f\x1fd\nt\x1fq\x1fp\x1fid\x1fc\n"); !ok || !slices.Equal(hs, want) {
		t.Fatalf("a well-formed qh2 payload: %v, %v; want %v", hs, ok, want)
	}
}

// TestHintPayloadVersions: a batch of commit hints only is sent in the first layout,
// which brokers that know no kinds read; a batch holding any queue-level hint is sent,
// every part of it, in the layout with kinds.
func TestHintPayloadVersions(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("q", 200)
	commits := make([]ports.Hint, 100) // several payloads
	for i := range commits {
		commits[i] = ports.Hint{Tenant: "t", Queue: long, Partition: fmt.Sprint(long, i)}
	}
	tests := []struct {
		name  string
		hints []ports.Hint
		tag   string
	}{
		{"commits only", commits, "qh1"},
		{"a queue change among commits", append(slices.Clone(commits), ports.Hint{Tenant: "t", Queue: "q", Kind: ports.HintQueueConfigured}), "qh2"},
		{"a queue deletion alone", []ports.Hint{{Tenant: "t", Queue: "q", Kind: ports.HintQueueDeleted}}, "qh2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			payloads, bad := encodeHints(testSender, 1, tt.hints)
			if bad != 0 || len(payloads) == 0 {
				t.Fatalf("%d payloads, %d left out", len(payloads), bad)
			}
			for i, p := range payloads {
				if !strings.HasPrefix(p, tt.tag+"\x1f") {
					t.Fatalf("payload %d of %d opens with %q, want %s", i+1, len(payloads), p[:3], tt.tag)
				}
			}
		})
	}
}

// TestHintAssembler: the parts of a batch are delivered once, whole; a payload that does
// not continue the batch under way delivers what had arrived first; the own sender's
// payloads are dropped.
func TestHintAssembler(t *testing.T) {
	t.Parallel()
	const other = "fedcba9876543210"
	pay := func(sender string, seq uint64, part, parts int, names ...string) string {
		var b strings.Builder
		fmt.Fprintf(&b, "qh1\x1f%s\x1f%d\x1f%d\x1f%d\n", sender, seq, part, parts)
		for _, n := range names {
			fmt.Fprintf(&b, "t\x1fq\x1f%s\x1fid\n", n)
		}
		return b.String()
	}
	tests := []struct {
		name     string
		payloads []string
		want     [][]string // partition names per delivered batch
	}{
		{"one payload", []string{pay(other, 1, 1, 1, "a", "b")}, [][]string{{"a", "b"}}},
		{"three parts, one batch", []string{pay(other, 1, 1, 3, "a"), pay(other, 1, 2, 3, "b"), pay(other, 1, 3, 3, "c")},
			[][]string{{"a", "b", "c"}}},
		{"a batch cut short by the next", []string{pay(other, 1, 1, 3, "a"), pay(other, 2, 1, 1, "b")},
			[][]string{{"a"}, {"b"}}},
		{"a part missing", []string{pay(other, 1, 1, 3, "a"), pay(other, 1, 3, 3, "c")}, [][]string{{"a"}, {"c"}}},
		{"another sender between parts", []string{pay(other, 1, 1, 2, "a"), pay("0000000000000001", 9, 1, 1, "x"),
			pay(other, 1, 2, 2, "b")}, [][]string{{"a"}, {"x"}, {"b"}}},
		{"own payloads are dropped", []string{pay(testSender, 1, 1, 1, "mine"), pay(other, 1, 1, 1, "theirs")},
			[][]string{{"theirs"}}},
		{"an empty part delivers nothing by itself", []string{pay(other, 1, 1, 2), pay(other, 1, 2, 2, "b")},
			[][]string{{"b"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var got [][]string
			a := hintAssembler{self: testSender, deliver: func(hs []ports.Hint) {
				var names []string
				for _, h := range hs {
					names = append(names, h.Partition)
				}
				got = append(got, names)
			}}
			for i, p := range tt.payloads {
				if !a.take(p) {
					t.Fatalf("payload %d refused", i)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Fatalf("delivered %v, want %v", got, tt.want)
			}
		})
	}
}

// listenStore runs s.Listen until the test ends, delivering into a channel, and returns
// once it is listening: it heard a probe of from (sent every 20 ms), and then the marker
// sent after the probes, so no probe is left on its way.
func listenStore(t *testing.T, s, from *Store) (hints <-chan []ports.Hint, done <-chan error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan []ports.Hint, 100)
	errc, finished := make(chan error, 1), make(chan struct{})
	go func() {
		defer close(finished)
		errc <- s.Listen(ctx, func(hs []ports.Hint) { ch <- hs })
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-finished:
		case <-time.After(30 * time.Second):
			t.Error("Listen did not return within 30 s of its context's end")
		}
	})
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(30 * time.Second)
	probe, marker := []ports.Hint{{Queue: "probe"}}, ports.Hint{Queue: "marker"}
	heard := false
	for {
		if !heard {
			if err := from.Publish(ctx, probe); err != nil {
				t.Fatal(err)
			}
		}
		select {
		case hs := <-ch:
			if slices.Contains(hs, marker) {
				return ch, errc
			}
			if !heard {
				heard = true
				if err := from.Publish(ctx, []ports.Hint{marker}); err != nil {
					t.Fatal(err)
				}
			}
		case err := <-errc:
			t.Fatalf("Listen returned %v", err)
		case <-deadline:
			t.Fatal("Listen did not hear the probes within 30 s")
		case <-tick.C:
		}
	}
}

// TestListenSkipsMalformedPayloads: notifications on the channel that are not hints are
// skipped and counted, and the listener goes on delivering.
func TestListenSkipsMalformedPayloads(t *testing.T) {
	t.Parallel()
	stores := hintStores(t, 2)
	hints, _ := listenStore(t, stores[0], stores[1])
	bad := []string{"", "hello", "qh1\x1fnot-hex-sender!!\x1f1\x1f1\x1f1\n", "qh1\x1f0123456789abcdef\x1f1\x1f1\x1f1\nonly\x1ftwo\n"}
	before := stores[0].HintStats().Malformed
	stores[1].exec(t, `SELECT pg_notify($1, p) FROM unnest($2::text[]) AS p`, hintChannel, bad)
	want := ports.Hint{Tenant: "t", Queue: "after", Partition: "p"}
	if err := stores[1].Publish(context.Background(), []ports.Hint{want}); err != nil {
		t.Fatal(err)
	}
	select {
	case hs := <-hints:
		if !slices.Equal(hs, []ports.Hint{want}) {
			t.Fatalf("delivered %v, want %v", hs, want)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("nothing delivered after the malformed payloads")
	}
	if got := stores[0].HintStats().Malformed - before; got != uint64(len(bad)) {
		t.Fatalf("%d malformed payloads counted, want %d", got, len(bad))
	}
}

// TestListenReturnsOnConnectionLoss: a listener whose connection dies returns an error
// (the caller listens again), not its context's.
func TestListenReturnsOnConnectionLoss(t *testing.T) {
	t.Parallel()
	stores := hintStores(t, 2)
	_, done := listenStore(t, stores[0], stores[1])
	var killed int
	if err := stores[1].pool.QueryRow(context.Background(), `SELECT count(pg_terminate_backend(pid))
		FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1`,
		stores[0].opts.ApplicationName+" hints").Scan(&killed); err != nil || killed != 1 {
		t.Fatalf("terminated %d listener connections, want 1 (%v)", killed, err)
	}
	select {
	case err := <-done:
		if err == nil || errors.Is(err, context.Canceled) || !errors.Is(err, ports.ErrUnavailable) {
			t.Fatalf("Listen returned %v, want an unavailable database", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Listen did not return within 30 s of losing its connection")
	}
}

// TestPublishReportsUnsendableHints: the hints that can travel are delivered, the others
// are counted and reported as invalid.
func TestPublishReportsUnsendableHints(t *testing.T) {
	t.Parallel()
	stores := hintStores(t, 2)
	hints, _ := listenStore(t, stores[0], stores[1])
	good := ports.Hint{Queue: "good", Partition: "p"}
	err := stores[1].Publish(context.Background(), []ports.Hint{{Queue: "bad\nname"}, good})
	if !errors.Is(err, ports.ErrInvalid) {
		t.Fatalf("Publish: %v, want ErrInvalid", err)
	}
	if n := stores[1].HintStats().Unsendable; n != 1 {
		t.Fatalf("%d unsendable hints counted, want 1", n)
	}
	select {
	case hs := <-hints:
		if !slices.Equal(hs, []ports.Hint{good}) {
			t.Fatalf("delivered %v, want %v", hs, good)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the good hint was not delivered")
	}
}

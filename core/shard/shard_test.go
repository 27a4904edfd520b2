package shard

import (
	"testing"

	"github.com/google/uuid"
)

func TestMintAndOf(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, 1, 2, 255, 256, Max} {
		id, err := Mint(n)
		if err != nil {
			t.Fatalf("Mint(%d): %v", n, err)
		}
		if got := Of(id); got != n {
			t.Errorf("Of(Mint(%d)) = %d", n, got)
		}
		u := uuid.UUID(id)
		want := uuid.Version(8)
		if n == 0 {
			want = 4
		}
		if u.Version() != want || u.Variant() != uuid.RFC4122 {
			t.Errorf("Mint(%d) = %s: version %d variant %v, want version %d, RFC 9562 variant", n, u, u.Version(), u.Variant(), want)
		}
	}
	for _, n := range []int{-1, Max + 1} {
		if _, err := Mint(n); err == nil {
			t.Errorf("Mint(%d) did not fail", n)
		}
	}
}

func TestOfOtherUUIDsIsShardZero(t *testing.T) {
	t.Parallel()
	for name, id := range map[string]uuid.UUID{
		"v4":                      uuid.New(),
		"v7":                      uuid.Must(uuid.NewV7()),
		"nil":                     uuid.Nil,
		"v8 with another variant": {0, 5, 0, 0, 0, 0, 0x80, 0, 0xc0, 0, 0, 0, 0, 0, 0, 0},
	} {
		if got := Of(id); got != 0 {
			t.Errorf("%s %s: Of = %d, want 0", name, id, got)
		}
	}
}

func TestMintIsRandom(t *testing.T) {
	t.Parallel()
	seen := map[[16]byte]bool{}
	for range 10000 {
		id, err := Mint(7)
		if err != nil {
			t.Fatal(err)
		}
		if seen[id] {
			t.Fatalf("Mint repeated %x", id)
		}
		seen[id] = true
	}
}

func FuzzOf(f *testing.F) {
	f.Add(make([]byte, 16), uint16(3))
	f.Fuzz(func(t *testing.T, raw []byte, n uint16) {
		var id [16]byte
		copy(id[:], raw)
		if s := Of(id); s < 0 || s > Max {
			t.Fatalf("Of(%x) = %d", id, s)
		}
		// Stamping a shard's version, variant and number on any bytes names that shard.
		if n == 0 {
			return
		}
		id[6] = id[6]&0x0f | 0x80
		id[8] = id[8]&0x3f | 0x80
		id[0], id[1] = byte(n>>8), byte(n)
		if s := Of(id); s != int(n) {
			t.Fatalf("Of(%x) = %d, want %d", id, s, n)
		}
	})
}

func TestPlace(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		req    Request
		shards int
		open   []int
		want   int
		err    bool
	}{
		{name: "one shard", req: Request{Queue: "q", Explicit: -1, NamespaceShard: -1}, shards: 1, want: 0},
		{name: "explicit wins", req: Request{Queue: "q", Namespace: "ns", Explicit: 2, NamespaceShard: 1}, shards: 3, want: 2},
		{name: "explicit may be closed", req: Request{Queue: "q", Explicit: 0, NamespaceShard: -1}, shards: 3, open: []int{1, 2}, want: 0},
		{name: "explicit out of range", req: Request{Queue: "q", Explicit: 3, NamespaceShard: -1}, shards: 3, err: true},
		{name: "namespace co-located", req: Request{Queue: "ns.b", Namespace: "ns", Explicit: -1, NamespaceShard: 1}, shards: 3, open: []int{2}, want: 1},
		{name: "open shards only", req: Request{Queue: "q", Explicit: -1, NamespaceShard: -1}, shards: 3, open: []int{2}, want: 2},
		{name: "open shard out of range", req: Request{Queue: "q", Explicit: -1, NamespaceShard: -1}, shards: 3, open: []int{5}, err: true},
		{name: "no shards", req: Request{Queue: "q", Explicit: -1, NamespaceShard: -1}, shards: 0, err: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got, err := Place(c.req, c.shards, c.open)
			if (err != nil) != c.err || (err == nil && got != c.want) {
				t.Fatalf("Place = %d, %v; want %d (error %v)", got, err, c.want, c.err)
			}
		})
	}
}

// Brokers placing the same queue propose the same shard, whatever order they list the
// open shards in; the queues of one namespace land together; names spread over shards.
func TestPlaceIsDeterministicAndSpreads(t *testing.T) {
	t.Parallel()
	a, _ := Place(Request{Queue: "orders", Explicit: -1, NamespaceShard: -1}, 4, []int{3, 1, 2})
	b, _ := Place(Request{Queue: "orders", Explicit: -1, NamespaceShard: -1}, 4, []int{1, 2, 3})
	if a != b {
		t.Fatalf("the same queue placed on %d and %d", a, b)
	}
	x, _ := Place(Request{Queue: "billing.a", Namespace: "billing", Explicit: -1, NamespaceShard: -1}, 4, nil)
	y, _ := Place(Request{Queue: "billing.b", Namespace: "billing", Explicit: -1, NamespaceShard: -1}, 4, nil)
	if x != y {
		t.Fatalf("two queues of one namespace placed apart (%d, %d) before either was recorded", x, y)
	}
	count := make([]int, 4)
	for i := range 4000 {
		s, err := Place(Request{Queue: "q" + string(rune('a'+i%26)) + string(rune(i)), Explicit: -1, NamespaceShard: -1}, 4, nil)
		if err != nil {
			t.Fatal(err)
		}
		count[s]++
	}
	for s, n := range count {
		if n < 800 || n > 1200 {
			t.Errorf("shard %d got %d of 4,000 queues: %v", s, n, count)
		}
	}
}

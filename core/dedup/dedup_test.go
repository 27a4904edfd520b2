package dedup

import (
	"fmt"
	"reflect"
	"testing"
)

func TestHashIsStableAndDistinct(t *testing.T) {
	t.Parallel()
	if a, b := Hash("order-91"), Hash("order-"+"91"); a != b {
		t.Fatal("hash of the same id differs")
	}
	if Hash("order-91") == Hash("order-92") {
		t.Fatal("hashes of different ids are equal")
	}
	// Pin the byte layout: SQL stores these bytes, so they must never change.
	got := fmt.Sprintf("%x", Hash(""))
	if len(got) != 32 {
		t.Fatalf("hash is %d hex chars, want 32", len(got))
	}
	if again := fmt.Sprintf("%x", Hash("")); got != again {
		t.Fatal("unstable")
	}
}

func TestLeaders(t *testing.T) {
	t.Parallel()
	k := func(q, p, txn string) Key { return Key{Tenant: "t", Queue: q, Partition: p, TransactionID: txn} }
	tests := []struct {
		name string
		keys []Key
		want []int
	}{
		{"empty", nil, []int{}},
		{"all distinct", []Key{k("q", "p", "a"), k("q", "p", "b")}, []int{0, 1}},
		{"first wins", []Key{k("q", "p", "a"), k("q", "p", "b"), k("q", "p", "a"), k("q", "p", "a")}, []int{0, 1, 0, 0}},
		{"partition scope", []Key{k("q", "p1", "a"), k("q", "p2", "a")}, []int{0, 1}},
		{"queue scope", []Key{k("q1", "p", "a"), k("q2", "p", "a")}, []int{0, 1}},
		{"tenant scope", []Key{k("q", "p", "a"), {Tenant: "u", Queue: "q", Partition: "p", TransactionID: "a"}}, []int{0, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := Leaders(tt.keys); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("Leaders = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestFirsts(t *testing.T) {
	t.Parallel()
	h := func(s ...string) [][16]byte {
		out := make([][16]byte, len(s))
		for i, x := range s {
			out[i] = Hash(x)
		}
		return out
	}
	many := make([]string, 20)
	wantMany := make([]int, 20)
	for i := range many {
		many[i] = fmt.Sprint(i % 7)
		wantMany[i] = i % 7
	}
	tests := []struct {
		name   string
		hashes [][16]byte
		want   []int
	}{
		{"none", nil, []int{}},
		{"one", h("a"), []int{0}},
		{"repeat small", h("a", "b", "a", "b", "c"), []int{0, 1, 0, 1, 4}},
		{"repeat large (map path)", h(many...), wantMany},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := Firsts(tt.hashes, nil); !reflect.DeepEqual(got, tt.want) && !(len(got) == 0 && len(tt.want) == 0) {
				t.Fatalf("Firsts = %v, want %v", got, tt.want)
			}
		})
	}
}

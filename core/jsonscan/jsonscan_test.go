package jsonscan

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

var documents = []string{
	`{}`, `[]`, `""`, `0`, `-0`, `1.5e-3`, `-12E+4`, `true`, `false`, `null`,
	` { "a" : [ 1 , "x\"y\\u00e9\n" , { } , null ] , "b" : { "c" : false } } `,
	`"\ud83d\ude00"`, "\"\xff\xfe\"", `{"a":1,"a":2}`,
	`01`, `-`, `1.`, `1e`, `.5`, `+1`, `[1,]`, `{"a":1,}`, `{"a"}`, `{a:1}`, `[1 2]`,
	`"\x"`, `"\u12"`, "\"a\tb\"", `tru`, `nul`, `[`, `{"a":[}`, `"abc`, `{} {}`, ``, ` `,
	strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth),
}

// FuzzSkipValueMatchesValid: SkipValue followed by End takes exactly the documents
// json.Valid takes, but for nesting deeper than maxDepth, which it leaves to
// encoding/json.
func FuzzSkipValueMatchesValid(f *testing.F) {
	for _, d := range documents {
		f.Add([]byte(d))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		s := New(doc)
		_, _, ok := s.SkipValue()
		ok = ok && s.End()
		valid := json.Valid(doc)
		if ok && !valid {
			t.Fatalf("the scanner took %q, which json.Valid refuses", doc)
		}
		if !ok && valid && bytes.Count(doc, []byte("["))+bytes.Count(doc, []byte("{")) <= maxDepth {
			t.Fatalf("the scanner refused %q, which json.Valid takes", doc)
		}
	})
}

func TestSkipValueMatchesValid(t *testing.T) {
	t.Parallel()
	for _, d := range documents {
		s := New([]byte(d))
		_, _, ok := s.SkipValue()
		if ok = ok && s.End(); ok != json.Valid([]byte(d)) {
			t.Errorf("%.40q: scanner %v, json.Valid %v", d, ok, !ok)
		}
	}
	deep := strings.Repeat("[", maxDepth+1) + strings.Repeat("]", maxDepth+1)
	if s := New([]byte(deep)); func() bool { _, _, ok := s.SkipValue(); return ok }() {
		t.Errorf("nesting %d deep was taken: past maxDepth encoding/json decides", maxDepth+1)
	}
}

// TestReads: what the readers take, what they leave for encoding/json, and the bounds
// they return.
func TestReads(t *testing.T) {
	t.Parallel()
	type doc struct {
		A string `json:"kind"`
		N int    `json:"n"`
	}
	tests := []struct {
		name string
		body string
		took bool
		want doc
	}{
		{"usual", `{"kind":"é x","n":-7,"other":[{"kind":1}]}`, true, doc{"é x", -7}},
		{"nulls leave fields alone", `{"kind":null,"n":null}`, true, doc{}},
		{"escaped value", `{"kind":"a\"b"}`, false, doc{}},
		{"escaped key", `{"kin\u0064":"a"}`, false, doc{}},
		{"key in another case", `{"KIND":"a"}`, false, doc{}},
		{"Kelvin sign folds to k", "{\"\u212aind\":\"a\"}", false, doc{}},
		{"other keys", `{"kinds":"a","kin":1,"x":{"kind":2}}`, true, doc{}},
		{"invalid UTF-8", "{\"kind\":\"\xff\"}", false, doc{}},
		{"control character", "{\"kind\":\"a\tb\"}", false, doc{}},
		{"float", `{"n":1.5}`, false, doc{}},
		{"string number", `{"n":"1"}`, false, doc{}},
		{"trailing data", `{"n":1} 2`, false, doc{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var got doc
			s := New([]byte(tt.body))
			took := s.Object(func(key []byte) bool {
				switch string(key) {
				case "kind":
					return s.StringInto(tt.body, &got.A)
				case "n":
					return s.IntInto(&got.N)
				}
				return s.SkipField(key, "kind", "n")
			}) && s.End()
			if took != tt.took {
				t.Fatalf("took = %v, want %v", took, tt.took)
			}
			if !took {
				return
			}
			var want doc
			if err := json.Unmarshal([]byte(tt.body), &want); err != nil {
				t.Fatalf("encoding/json refuses what the scanner took: %v", err)
			}
			if got != want || got != tt.want {
				t.Fatalf("scanned %+v, encoding/json %+v, want %+v", got, want, tt.want)
			}
		})
	}
}

func TestArrayAndName(t *testing.T) {
	t.Parallel()
	body := []byte(` [ "a" , "bé" ] `)
	s := New(body)
	var names []string
	if !s.Array(func() bool {
		n, ok := s.Name()
		names = append(names, string(n))
		return ok
	}) || !s.End() || strings.Join(names, ",") != "a,bé" {
		t.Fatalf("read %q", names)
	}
	for _, bad := range []string{`[""]`, `["a\"b"]`, `[null]`, `[1]`, "[\"\xff\"]"} {
		s := New([]byte(bad))
		if s.Array(func() bool { _, ok := s.Name(); return ok }) {
			t.Errorf("Name took %q", bad)
		}
	}
	s = New([]byte(` {"p": [1, {"x":"}"}] , "q":2}`))
	var start, end int
	s.Object(func(key []byte) bool {
		if string(key) == "p" {
			var ok bool
			start, end, ok = s.SkipValue()
			return ok
		}
		_, _, ok := s.SkipValue()
		return ok
	})
	if got := string(s.Bytes()[start:end]); got != `[1, {"x":"}"}]` {
		t.Fatalf("SkipValue's bounds hold %q", got)
	}
}

package verify

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestProducedRoundTrip(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		produced map[string]Produced
		file     string // exact bytes WriteProduced must write
		readBack map[string]Produced
	}{
		{
			name:     "empty",
			produced: map[string]Produced{},
			file:     producedHeader,
			readBack: map[string]Produced{},
		},
		{
			name:     "sorted, base written only when not zero",
			produced: map[string]Produced{"p2": {Max: 7399}, "p1": {Max: 7406}, "p3": {Base: 100, Max: 250}},
			file:     producedHeader + "p1 7406\np2 7399\np3 250 100\n",
			readBack: map[string]Produced{"p2": {Max: 7399}, "p1": {Max: 7406}, "p3": {Base: 100, Max: 250}},
		},
		{
			name:     "nothing produced is omitted",
			produced: map[string]Produced{"a": {Max: 0}, "none": {Base: 3, Max: 2}},
			file:     producedHeader + "a 0\n",
			readBack: map[string]Produced{"a": {Max: 0}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), ProducedFile)
			if err := WriteProduced(path, tt.produced); err != nil {
				t.Fatal(err)
			}
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if string(raw) != tt.file {
				t.Errorf("file = %q, want %q", raw, tt.file)
			}
			got, err := ReadProduced(path)
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(got, tt.readBack) {
				t.Errorf("read back %v, want %v", got, tt.readBack)
			}
		})
	}
}

func TestWriteProducedRefuses(t *testing.T) {
	t.Parallel()
	tests := map[string]map[string]Produced{
		"space in entity":   {"a b": {Max: 1}},
		"empty entity":      {"": {Max: 1}},
		"leading #":         {"#a": {Max: 1}},
		"newline in entity": {"a\n": {Max: 1}},
		"negative base":     {"a": {Base: -1, Max: 1}},
		"max below base-1":  {"a": {Base: 5, Max: 1}},
		"max above MaxSeq":  {"a": {Max: MaxSeq + 1}},
	}
	for name, produced := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if err := WriteProduced(filepath.Join(t.TempDir(), ProducedFile), produced); err == nil {
				t.Errorf("WriteProduced(%v) succeeded", produced)
			}
		})
	}
}

func TestReadProducedErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		file string
		line int
	}{
		{"one field", "# h\na\n", 2},
		{"four fields", "a 1 0 9\n", 1},
		{"base above max", "a 1\nb 1 2\n", 2},
		{"negative", "a -1\n", 1},
		{"not a number", "a x\n", 1},
		{"duplicate entity", "a 1\nb 2\na 3\n", 3},
		{"blank line", "a 1\n\n", 2},
		{"missing final newline", "a 1\nb 2", 2},
		{"CRLF", "a 1\r\n", 1},
		{"double space", "a  1\n", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := writeFile(t, t.TempDir(), ProducedFile, tt.file)
			_, err := ReadProduced(path)
			want := fmt.Sprintf("%s:%d:", path, tt.line)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("err = %v, want one naming %s", err, want)
			}
		})
	}
}

func TestReadProducedComments(t *testing.T) {
	t.Parallel()
	path := writeFile(t, t.TempDir(), ProducedFile, "# header\na 5\n# flow B\nb 9 3\n")
	got, err := ReadProduced(path)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Produced{"a": {Max: 5}, "b": {Base: 3, Max: 9}}
	if !maps.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

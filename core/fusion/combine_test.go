package fusion

import "testing"

func TestCombine(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   []Stats
		want Stats
	}{
		{"none", nil, Stats{}},
		{"one", []Stats{{Commits: 2, Segments: 3, Frames: 4, ItemsPerBatch: 2}}, Stats{Commits: 2, Segments: 3, Frames: 4, ItemsPerBatch: 2}},
		{"weighted by commits", []Stats{
			{Commits: 3, Failed: 1, Segments: 30, Frames: 60, ItemsPerBatch: 20},
			{Commits: 1, Segments: 4, Frames: 4, ItemsPerBatch: 4},
			{Failed: 2}, // a shard that never committed weighs nothing
		}, Stats{Commits: 4, Failed: 3, Segments: 34, Frames: 64, ItemsPerBatch: 16}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := Combine(tt.in...); got != tt.want {
				t.Errorf("Combine = %+v, want %+v", got, tt.want)
			}
		})
	}
}

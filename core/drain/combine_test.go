package drain

import (
	"testing"
	"time"
)

func TestCombine(t *testing.T) {
	t.Parallel()
	early, late := time.Unix(100, 0), time.Unix(200, 0)
	tests := []struct {
		name string
		in   []Status
		want Status
	}{
		{"none", nil, Status{DBHealthy: true}},
		{"one", []Status{{Pending: 3, DBHealthy: true}}, Status{Pending: 3, DBHealthy: true}},
		{"several add up, one unhealthy, latest failure", []Status{
			{Pending: 3, Failed: 1, FailedFiles: 1, FailedBytes: 10, DBHealthy: true, SpoolWriteFailedAt: late},
			{Pending: 4, Failed: 2, FailedFiles: 2, FailedBytes: 20, DBHealthy: false, SpoolWriteFailedAt: early},
		}, Status{Pending: 7, Failed: 3, FailedFiles: 3, FailedBytes: 30, DBHealthy: false, SpoolWriteFailedAt: late}},
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

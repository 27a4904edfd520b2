package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/queen-go/queen/core/consume"
	"github.com/queen-go/queen/ports"
)

// downStore is a ConsumeStore whose database is away.
type downStore struct{}

func (downStore) Pop(context.Context, ports.PopRequest) ([]ports.Claim, []ports.Verdict, error) {
	return nil, nil, fmt.Errorf("pop: %w", ports.ErrUnavailable)
}

func (downStore) Ack(context.Context, []ports.AckItem) ([]ports.AckResult, error) {
	return nil, fmt.Errorf("ack: %w", ports.ErrUnavailable)
}

func (downStore) Release(context.Context, string, string, bool, []ports.Claim) error {
	return fmt.Errorf("release: %w", ports.ErrUnavailable)
}

func (downStore) ExtendLease(context.Context, string, time.Duration) (int, time.Time, error) {
	return 0, time.Time{}, fmt.Errorf("extend: %w", ports.ErrUnavailable)
}

// An ack the database did not take still answers 200 with one failed item per input
// (api.md §5.3): the lease expires and the messages redeliver.
func TestAckDatabaseFailureAnswersPerItem(t *testing.T) {
	t.Parallel()
	h := New(Services{DB: pinger{}, Consume: consume.New(downStore{}, nil, consume.Options{})}, Options{})
	body := `{"acknowledgments":[
		{"transactionId":"t1","partitionId":"0198a0e2-7a3c-7000-8000-000000000001","leaseId":"0198a0e2-7a3c-7000-8000-000000000002"},
		{"transactionId":"t2"}]}`
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/api/v1/ack/batch", strings.NewReader(body)))
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d, body %s", rec.Code, rec.Body)
	}
	var res []ackResult
	if err := json.Unmarshal(rec.Body.Bytes(), &res); err != nil || len(res) != 2 {
		t.Fatalf("body %s: %v", rec.Body, err)
	}
	want := []string{"ack flush failed; lease will expire and redeliver", "partitionId is required"}
	for i, r := range res {
		if r.Index != i || r.Success || r.Error == nil || *r.Error != want[i] || r.LeaseReleased {
			t.Fatalf("item %d: %+v, want error %q", i, r, want[i])
		}
	}
	if res[0].TransactionID != "t1" || res[1].TransactionID != "t2" {
		t.Fatalf("transaction ids %+v", res)
	}
}

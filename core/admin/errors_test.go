package admin

import (
	"errors"
	"testing"
)

func TestErrors(t *testing.T) {
	t.Parallel()
	err := notFound("Queue not found")
	if !errors.Is(err, ErrNotFound) || err.Error() != "Queue not found" {
		t.Fatalf("%v", err)
	}
	ie := inputErrorf("limit", "query parameter limit=%q: want an integer", "x")
	var got *InputError
	if !errors.As(error(ie), &got) || got.Param != "limit" || got.Error() != `query parameter limit="x": want an integer` {
		t.Fatalf("%+v", ie)
	}
}

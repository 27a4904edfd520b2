package consume

import (
	"testing"

	"github.com/queen-go/queen/core/notify"
)

func woken(x *Wait) bool {
	select {
	case <-x.C():
		return true
	default:
		return false
	}
}

func TestWakerWakesOnePopPerGroup(t *testing.T) {
	t.Parallel()
	w := NewWaker()
	k := notify.QueueKey("t", "q")
	a1, a2 := w.Wait(k, "a", ""), w.Wait(k, "a", "")
	b1 := w.Wait(k, "b", "")
	pinnedP, pinnedP2, pinnedQ := w.Wait(k, "a", "p"), w.Wait(k, "b", "p"), w.Wait(k, "a", "q")
	other := w.Wait(notify.QueueKey("t", "other"), "a", "")
	disc := w.WaitAny("a")

	w.Notify(k, "p")
	for name, tt := range map[string]struct {
		x    *Wait
		want bool
	}{
		"first of group a": {a1, true}, "second of group a": {a2, false}, "first of group b": {b1, true},
		"pinned to p (a)": {pinnedP, true}, "pinned to p (b)": {pinnedP2, true}, "pinned to q": {pinnedQ, false},
		"another queue": {other, false}, "discovery": {disc, true},
	} {
		if got := woken(tt.x); got != tt.want {
			t.Errorf("%s: woken %v, want %v", name, got, tt.want)
		}
	}
	// The next commit goes to the next pop of group a.
	a1.Done(true)
	w.Notify(k, "p")
	if !woken(a2) {
		t.Fatal("second commit did not wake the next pop of the group")
	}
}

func TestWakerHandsOnUnusedWakes(t *testing.T) {
	t.Parallel()
	w := NewWaker()
	k := notify.QueueKey("t", "q")
	gone, next := w.Wait(k, "g", ""), w.Wait(k, "g", "")
	w.Notify(k, "p")
	if !woken(gone) || woken(next) {
		t.Fatal("want only the first pop woken")
	}
	gone.Done(false) // its client left: the wake goes on
	if !woken(next) {
		t.Fatal("an unused wake was lost")
	}
	// A pop that stops waiting without a wake leaves no trace: the next commit is for
	// a pop that is still parked.
	left, parked := w.Wait(k, "h", ""), w.Wait(k, "h", "")
	left.Done(false)
	w.Notify(k, "p")
	if !woken(parked) {
		t.Fatal("a departed pop absorbed a wake")
	}
	var none *Wait
	none.Done(false) // nil-safe for pops that do not wait
}

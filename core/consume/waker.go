package consume

import "sync"

// Waker wakes parked pops when their queue receives a commit. Keys are
// tenant + "\x1f" + queue; WaitAny wakes on a commit to any queue (discovery pops).
//
// A channel is created only when a pop parks and closed (then forgotten) by the next
// commit to its key, so a commit to a queue nobody waits on costs one map lookup.
type Waker struct {
	mu    sync.Mutex
	chans map[string]chan struct{}
	any   chan struct{}
}

// NewWaker returns an empty Waker.
func NewWaker() *Waker { return &Waker{chans: make(map[string]chan struct{})} }

// Key is the waker key of a queue.
func Key(tenant, queue string) string { return tenant + "\x1f" + queue }

// Wait returns a channel closed by the next Notify of key.
func (w *Waker) Wait(key string) <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	ch, ok := w.chans[key]
	if !ok {
		ch = make(chan struct{})
		w.chans[key] = ch
	}
	return ch
}

// WaitAny returns a channel closed by the next Notify of any key.
func (w *Waker) WaitAny() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.any == nil {
		w.any = make(chan struct{})
	}
	return w.any
}

// Notify wakes every pop waiting on key and every WaitAny.
func (w *Waker) Notify(key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if ch, ok := w.chans[key]; ok {
		close(ch)
		delete(w.chans, key)
	}
	if w.any != nil {
		close(w.any)
		w.any = nil
	}
}

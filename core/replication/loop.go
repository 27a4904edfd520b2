package replication

import "time"

// loop runs a function every period on a goroutine of its own, between start and stop:
// the re-checks of Check and the measurements of ReadRouter. The zero value is stopped;
// start and stop are called by one owner (App.Start and App.Stop), never concurrently.
type loop struct {
	stop, done chan struct{}
}

// running reports whether start was called without a stop since.
func (l *loop) running() bool { return l.stop != nil }

// start runs fn every period until stop.
func (l *loop) start(period time.Duration, fn func()) {
	l.stop, l.done = make(chan struct{}), make(chan struct{})
	go func(stop <-chan struct{}, done chan<- struct{}) {
		defer close(done)
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				fn()
			}
		}
	}(l.stop, l.done)
}

// halt ends the loop and waits for a run of fn under way; stopped already: nothing.
func (l *loop) halt() {
	if l.stop == nil {
		return
	}
	close(l.stop)
	<-l.done
	l.stop = nil
}

package ports

import (
	"context"
	"fmt"
	"time"
)

// Activity hears of the work done for each queue as it happens, for the metrics history
// (core/history). Its methods are called on the push, pop and ack paths, once per
// request and queue, so they must cost no more than a few atomic additions and never
// block or touch the database.
type Activity interface {
	// Pushed: one push request stored messages in queue (a request naming several
	// queues counts one request on each).
	Pushed(tenant, queue string, messages int)
	// Popped: one pop request of queue delivered messages (0: an empty pop); lagSumMs and
	// lagMaxMs are the sum and the largest of their push-to-pop times, in milliseconds.
	Popped(tenant, queue string, messages int, lagSumMs, lagMaxMs int64)
	// Acked: one ack request's acknowledgements of queue: success applied, failed ones
	// (retried or dead-lettered), and of those dlq moved to the dead letters.
	Acked(tenant, queue string, success, failed, dlq int)
	// Transacted: one transaction wrote to queue.
	Transacted(tenant, queue string)
	// PartitionsCreated and PartitionsDeleted: partitions of queue came and went.
	PartitionsCreated(tenant, queue string, n int)
	PartitionsDeleted(tenant, queue string, n int)
}

// Counters are the activity counters of one queue, or of one broker over all queues,
// over some span of time: one flush's deltas, a minute, or a bucket of minutes. Lag is
// kept as a sum and a count so that averages over any span are exact; LagMaxMs and
// ParkedMax are maxima, the rest sums.
type Counters struct {
	PushRequests, PushMessages           int64
	PopRequests, PopMessages, PopEmpty   int64
	AckRequests, AckSuccess, AckFailed   int64
	DLQMoves, Transactions               int64
	PartitionsCreated, PartitionsDeleted int64
	LagCount, LagSumMs, LagMaxMs         int64
	// ParkedMax is the most long polls parked at once on the queue (summed over brokers
	// when several write the same minute).
	ParkedMax int64
}

// Add adds o to c: sums add, maxima take the larger.
func (c *Counters) Add(o Counters) {
	c.PushRequests += o.PushRequests
	c.PushMessages += o.PushMessages
	c.PopRequests += o.PopRequests
	c.PopMessages += o.PopMessages
	c.PopEmpty += o.PopEmpty
	c.AckRequests += o.AckRequests
	c.AckSuccess += o.AckSuccess
	c.AckFailed += o.AckFailed
	c.DLQMoves += o.DLQMoves
	c.Transactions += o.Transactions
	c.PartitionsCreated += o.PartitionsCreated
	c.PartitionsDeleted += o.PartitionsDeleted
	c.LagCount += o.LagCount
	c.LagSumMs += o.LagSumMs
	c.LagMaxMs = max(c.LagMaxMs, o.LagMaxMs)
	c.ParkedMax = max(c.ParkedMax, o.ParkedMax)
}

// Gauge is a figure sampled several times in a span: the sum of the samples (avg = Sum
// / Samples of its BrokerFigures), the smallest, the largest and the last.
type Gauge struct {
	Sum, Min, Max, Last int64
}

// BrokerFigures are one broker's process figures over a span. CPU and request figures
// are used in the span; the gauges are samples taken in it (Samples of each).
type BrokerFigures struct {
	CPUUserUs, CPUSysUs        int64 // CPU time, µs
	Requests                   int64 // HTTP requests answered
	LatencySumUs, LatencyMaxUs int64 // their latency, µs
	DBErrors                   int64 // database statements that failed
	Samples                    int64
	RSS, PoolIdle, PoolActive  Gauge // bytes; connections
	VirtualBytes               int64 // last sample
	PoolSize                   int64 // last sample
	SpoolPendingMax            int64 // spooled records not yet replayed
	SpoolPendingLast           int64
	GoroutinesMax              int64
	GoroutinesLast             int64
}

// QueueMinute is what one broker counted for one queue in (part of) one minute.
type QueueMinute struct {
	Minute        time.Time // UTC, truncated to the minute
	Tenant, Queue string
	Counters
}

// BrokerMinute is one broker's totals over every queue and its process figures in (part
// of) one minute; Parked holds the most long polls parked at once per queue (queues
// with none left out).
type BrokerMinute struct {
	Minute           time.Time
	Broker, Hostname string
	Port             int
	Counters
	Figures BrokerFigures
	Parked  map[string]int64
}

// MetricsFlush is one broker's write to the metrics history: the deltas counted since
// its previous flush. Instance (a UUID, one per broker process) and Seq (increasing per
// instance) identify it: a flush written twice is applied once.
type MetricsFlush struct {
	Instance string
	Seq      int64
	Queues   []QueueMinute
	Brokers  []BrokerMinute
}

// MetricsWriter stores the metrics history.
type MetricsWriter interface {
	// WriteMetrics adds f's deltas to the rows of their minutes, in one transaction,
	// unless a flush of the same Instance and Seq was applied before (then it does
	// nothing and returns nil).
	WriteMetrics(ctx context.Context, f MetricsFlush) error
}

// Check refuses a flush that names a queue row or a broker row twice (ErrInvalid): a
// writer adds each row's deltas once per flush, and one statement cannot upsert a row
// twice. The Recorder never builds such a flush.
func (f MetricsFlush) Check() error {
	type queueKey struct {
		minute        time.Time
		tenant, queue string
	}
	type brokerKey struct {
		minute time.Time
		broker string
	}
	qs := make(map[queueKey]bool, len(f.Queues))
	for _, q := range f.Queues {
		k := queueKey{q.Minute.UTC(), q.Tenant, q.Queue}
		if qs[k] {
			return fmt.Errorf("metrics flush names queue %s of tenant %s at %s twice: %w", q.Queue, q.Tenant, k.minute, ErrInvalid)
		}
		qs[k] = true
	}
	bs := make(map[brokerKey]bool, len(f.Brokers))
	for _, b := range f.Brokers {
		k := brokerKey{b.Minute.UTC(), b.Broker}
		if bs[k] {
			return fmt.Errorf("metrics flush names broker %s at %s twice: %w", b.Broker, k.minute, ErrInvalid)
		}
		bs[k] = true
	}
	return nil
}

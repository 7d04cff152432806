package outbound

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/inboxd/inboxd/store"
)

// DefaultRetrySchedule is SPEC §6's delays between attempts; the last one
// repeats until MaxRetryAge.
var DefaultRetrySchedule = []time.Duration{
	time.Minute, 5 * time.Minute, 15 * time.Minute, 30 * time.Minute, time.Hour, 2 * time.Hour, 4 * time.Hour,
}

// MaxRetryAge is how long a deferred recipient is retried before failed
// (SPEC §6).
const MaxRetryAge = 72 * time.Hour

// Relay hands mail to the smarthost of --outbound relay (smtp.Relay is the
// real one; smtp.Direct is --outbound direct's). The worker calls Send
// from as many goroutines at once as its Concurrency, each with its own
// message.
//
// Send submits raw from `from` to rcpts and returns exactly one reply per
// recipient, in rcpts' order: 2xx is accepted, 4xx or Code 0 (no answer:
// the relay was unreachable or the connection broke) is retried, anything
// else bounces. Once ctx is done Send gives up what it waits for, unless
// the data is all sent (the server may have the message), and what was
// not answered is a Code 0. Send never fails as a whole; every failure is
// some recipient's reply. When the relay accepted the data, dataText is its
// final 250 text (where SES-style relays put the Message-ID they
// assigned), otherwise "".
//
// Close releases what Send keeps between calls (a pooled connection); the
// worker calls it once, when Run stops, and Send is not called after it.
type Relay interface {
	Send(ctx context.Context, from string, rcpts []string, raw []byte) (replies []store.RelayReply, dataText string)
	Close() error
}

// WorkerConfig configures the delivery worker.
type WorkerConfig struct {
	Relay Relay // nil unless --outbound relay or direct
	// Concurrency is how many messages are handed to Relay at once
	// (default 1), so that a slow mail exchanger holds only its own.
	Concurrency int
	// PerDomain, when positive, is how many of those may be for one
	// recipient domain, so that one slow domain's queue does not take
	// every slot (a message counts for each domain it is sent to).
	PerDomain int
	// ShutdownGrace is how long Run, once its context is done, lets the
	// messages in flight finish before cancelling them (default 10 s).
	ShutdownGrace time.Duration
	// Lease is how long a claimed delivery is held by its attempt; a
	// process that dies mid-attempt leaves it due again after this
	// (default 10 min). A message still in flight is never claimed again.
	Lease         time.Duration
	RetrySchedule []time.Duration
	MaxRetryAge   time.Duration // MaxRetryAge when zero
	// MessageIDPattern extracts a relay-assigned Message-ID from its 250
	// text (one capture group); MessageIDFormat turns the group into the id
	// ("%s@email.amazonses.com"), "%s" by default.
	MessageIDPattern *regexp.Regexp
	MessageIDFormat  string
	// Now is the worker's clock (time.Now when nil); retry decisions and
	// the waits for them use it. It must agree with the store's clock,
	// which decides what is due.
	Now func() time.Time
	// Jitter returns a number in [0, 1); a retry's delay is scaled by
	// 0.9 + 0.2×Jitter() (SPEC §6's ±10%). The worker calls it from one
	// goroutine at a time; a random source of the worker's own when nil.
	Jitter func() float64
	Logger *slog.Logger
	// Metrics, when set, counts relay attempts by result.
	Metrics *Metrics
}

// Worker drains the durable delivery queue.
type Worker struct {
	db       *store.DB
	cfg      WorkerConfig
	beat     atomic.Int64 // wall-clock UnixNano of the loop's last turn
	jitterMu sync.Mutex   // cfg.Jitter is called from the messages' goroutines
}

// HeartbeatEvery is how often, at least, Run's loop turns when it has
// nothing to do; readiness (/readyz) holds a worker silent for much
// longer to be stuck.
const HeartbeatEvery = 30 * time.Second

// Heartbeat is when the worker last showed it runs (wall clock): its
// loop's last turn, or the last message it handed to the relay. A new
// worker counts as having just run.
func (w *Worker) Heartbeat() time.Time { return time.Unix(0, w.beat.Load()) }

func (w *Worker) pulse() { w.beat.Store(time.Now().UnixNano()) }

// NewWorker returns the worker; start it with Run.
func NewWorker(db *store.DB, cfg WorkerConfig) *Worker {
	if len(cfg.RetrySchedule) == 0 {
		cfg.RetrySchedule = DefaultRetrySchedule
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Jitter == nil {
		cfg.Jitter = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64())).Float64
	}
	if cfg.MaxRetryAge == 0 {
		cfg.MaxRetryAge = MaxRetryAge
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 1
	}
	if cfg.Lease <= 0 {
		cfg.Lease = 10 * time.Minute
	}
	if cfg.ShutdownGrace <= 0 {
		cfg.ShutdownGrace = 10 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.MessageIDFormat == "" {
		cfg.MessageIDFormat = "%s"
	}
	w := &Worker{db: db, cfg: cfg}
	w.pulse()
	return w
}

// Run delivers due recipients until ctx is done. It wakes when a commit
// may have queued something, when a message in flight is done and frees
// its slot, and when the next retry is due; queued work survives restarts
// because it lives in the database. Local recipients are delivered by the
// loop itself; each message for Relay goes in a goroutine of its own, at
// most Concurrency at once. When ctx is done Run stops claiming, lets the
// messages in flight finish for up to ShutdownGrace, cancels the rest
// (their recipients are retried) and returns once each is recorded.
func (w *Worker) Run(ctx context.Context) error {
	if err := w.db.ReleaseDeliveryClaims(ctx); err != nil {
		return err
	}
	busy := map[string][]string{} // messages in flight, and their recipients' domains
	done := make(chan string, w.cfg.Concurrency)
	sendCtx, cancelSends := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelSends()
	var wg sync.WaitGroup
	for {
		w.pulse()
		changed := w.db.OutboundChanged()
		wait := time.Hour
		next, ok, err := w.db.NextDeliveryAt(ctx)
		now := w.cfg.Now() // before dispatch: what falls due while it claims is after now
		switch {
		case err != nil:
			if ctx.Err() == nil {
				w.cfg.Logger.Error("outbound: next delivery", "err", err)
			}
			wait = 5 * time.Second // back off on database trouble
		case ok && !next.After(now):
			started, err := w.dispatch(ctx, sendCtx, busy, done, &wg)
			if err != nil {
				if ctx.Err() == nil {
					w.cfg.Logger.Error("outbound: deliver", "err", err)
				}
				wait = 5 * time.Second
				break
			}
			if started {
				continue // there may be more
			}
			// Due but not taken: every slot is busy, or what is due is in
			// flight still or waits for its domain's messages in flight.
			// A message done wakes us, and so does a commit; otherwise
			// look again when the next attempt falls due. With nothing in
			// flight, look again shortly rather than spin.
			wait = time.Second
			if len(busy) > 0 {
				wait = time.Hour
				if after, ok, err := w.db.NextDeliveryAfter(ctx, now); err == nil && ok {
					wait = after.Sub(w.cfg.Now())
				}
			}
		case ok:
			wait = next.Sub(now)
		}
		timer := time.NewTimer(min(wait, HeartbeatEvery))
		select {
		case <-ctx.Done():
			timer.Stop()
			w.shutdown(&wg, done, cancelSends)
			if w.cfg.Relay != nil {
				w.cfg.Relay.Close()
			}
			return nil
		case id := <-done:
			delete(busy, id)
		case <-changed:
		case <-timer.C:
		}
		timer.Stop()
		// Collect every other message done before claiming again.
		for drained := false; !drained; {
			select {
			case id := <-done:
				delete(busy, id)
			default:
				drained = true
			}
		}
	}
}

// dispatch delivers the due local recipients, then claims the due relay
// ones of as many messages as there are free slots (and their domains
// allow) and starts each message's delivery (in sendCtx). It reports
// whether it did anything.
func (w *Worker) dispatch(ctx, sendCtx context.Context, busy map[string][]string, done chan<- string, wg *sync.WaitGroup) (bool, error) {
	local, err := w.db.DeliverLocalDue(ctx, 100)
	if err != nil {
		return false, fmt.Errorf("local delivery: %w", err)
	}
	free := w.cfg.Concurrency - len(busy)
	if free <= 0 {
		return local > 0, nil
	}
	inFlight := map[string]int{}
	for _, domains := range busy {
		for _, d := range domains {
			inFlight[d]++
		}
	}
	claimed, err := w.db.ClaimDeliveries(ctx, store.Claim{Messages: free, Busy: slices.Collect(maps.Keys(busy)),
		PerDomain: w.cfg.PerDomain, InFlight: inFlight, Lease: w.cfg.Lease})
	if err != nil {
		return local > 0, err
	}
	started := 0
	for len(claimed) > 0 { // grouped by message
		n := 1
		for n < len(claimed) && claimed[n].MessageID == claimed[0].MessageID {
			n++
		}
		cs, id := claimed[:n], claimed[0].MessageID
		claimed = claimed[n:]
		var domains []string
		for _, c := range cs {
			if !slices.Contains(domains, c.Domain) {
				domains = append(domains, c.Domain)
			}
		}
		busy[id] = domains
		started++
		wg.Go(func() {
			defer func() { done <- id }()
			w.pulse()
			if err := w.relay(sendCtx, cs); err != nil {
				// Unrecorded, the claim's lease makes it due again.
				w.cfg.Logger.Error("outbound: deliver", "message", id, "err", err)
			}
		})
	}
	return local > 0 || started > 0, nil
}

// shutdown waits for the messages in flight, up to ShutdownGrace, then
// cancels them and waits for their outcomes to be recorded; it takes
// what they send on done meanwhile.
func (w *Worker) shutdown(wg *sync.WaitGroup, done <-chan string, cancelSends context.CancelFunc) {
	all := make(chan struct{})
	go func() { wg.Wait(); close(all) }()
	t := time.NewTimer(w.cfg.ShutdownGrace)
	defer t.Stop()
	for {
		select {
		case <-done:
		case <-all:
			return
		case <-t.C:
			w.cfg.Logger.Warn("outbound: cancelling deliveries still in flight at shutdown")
			cancelSends()
		}
	}
}

// relay hands one message to the smarthost for its claimed recipients.
func (w *Worker) relay(ctx context.Context, cs []store.DeliveryClaim) error {
	now := w.cfg.Now()
	var results []store.DeliveryResult
	if w.cfg.Relay == nil {
		// Queued for a relay that is no longer configured: retry later
		// (the operator may restore it) until the retry window closes.
		for _, c := range cs {
			results = append(results, w.retry(c, now, 0, "no relay configured (--outbound relay)"))
		}
		if err := w.db.RecordDeliveries(ctx, results); err != nil {
			return err
		}
		w.cfg.Metrics.observe(results)
		return nil
	}
	raw, err := w.db.Raw(ctx, cs[0].MessageID)
	if errors.Is(err, store.ErrNotFound) {
		return nil // deleted (with its inbox) since the claim, and its deliveries with it
	}
	if err != nil {
		return err
	}
	rcpts := make([]string, len(cs))
	for i, c := range cs {
		rcpts[i] = c.Email
	}
	answers, dataText := w.cfg.Relay.Send(ctx, cs[0].From, rcpts, raw)
	now = w.cfg.Now() // a retry's delay counts from the answer: a slow exchanger's minutes are not part of it
	// The relay has answered: what it said is recorded even if the worker
	// is stopping meanwhile. Left unrecorded, the claim would be released
	// at the next start and the mail relayed a second time.
	ctx = context.WithoutCancel(ctx)
	accepted := false
	for i, c := range cs {
		a := answers[i]
		switch {
		case a.Code/100 == 2:
			accepted = true
			results = append(results, store.DeliveryResult{ID: c.ID, Status: store.StatusSent, Code: a.Code, Message: a.Message})
		case a.Code == 0 || a.Code/100 == 4: // no answer at all, or a temporary one
			results = append(results, w.retry(c, now, a.Code, a.Message))
		default:
			results = append(results, store.DeliveryResult{ID: c.ID, Status: store.StatusBounced, Code: a.Code, Message: a.Message})
		}
	}
	if err := w.db.RecordDeliveries(ctx, results); err != nil {
		return err
	}
	w.cfg.Metrics.observe(results)
	if accepted {
		// The relay has answered: the final Message-ID is known (its own,
		// when it rewrote ours), and replies waiting for it thread now.
		alias := ""
		if p := w.cfg.MessageIDPattern; p != nil {
			if m := p.FindStringSubmatch(dataText); len(m) > 1 && m[1] != "" {
				alias = strings.Trim(fmt.Sprintf(w.cfg.MessageIDFormat, m[1]), "<>")
			}
		}
		if _, err := w.db.ConfirmMessageID(ctx, cs[0].MessageID, alias); err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
	}
	return nil
}

// retry schedules the next attempt with ±10% jitter, or fails the
// recipient once the retry window is over.
func (w *Worker) retry(c store.DeliveryClaim, now time.Time, code int, text string) store.DeliveryResult {
	s := w.cfg.RetrySchedule
	delay := s[min(c.Attempts-1, len(s)-1)]
	w.jitterMu.Lock()
	j := w.cfg.Jitter()
	w.jitterMu.Unlock()
	delay += time.Duration((j*0.2 - 0.1) * float64(delay))
	next := now.Add(delay)
	if next.Sub(c.FirstAttemptAt) > w.cfg.MaxRetryAge {
		return store.DeliveryResult{ID: c.ID, Status: store.StatusFailed, Code: code, Message: text}
	}
	return store.DeliveryResult{ID: c.ID, Status: store.StatusDeferred, Code: code, Message: text, NextAttempt: next}
}

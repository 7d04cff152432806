package store

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/inboxd/inboxd/corpus"
)

// steadyWindow is the retention window of the steady-state benchmarks:
// the simulated clock moves window/keep per message, so that event-log
// retention (--event-retention) keeps about the events of the keep
// newest messages, as --max-messages keeps the messages.
const steadyWindow = 30 * 24 * time.Hour

// BenchmarkRetentionSteadyState ingests b.N 4 KB messages (half of them
// replies) into one inbox kept at its keep newest (--max-messages, 10,000,
// or b.N/5 when that is smaller) with event-log retention on (30 days of
// simulated time are the last keep messages' worth), a retention round of
// the writer (PruneNow) every 1,000 messages as its rounds every 15 s do,
// and reports the database file's size with its WAL at each quarter and
// the growth from half time to the end. With retention on it must stay
// flat once the inbox is full. Run with -benchtime 100000x (or smaller:
// 20000x keeps 4,000).
func BenchmarkRetentionSteadyState(b *testing.B) {
	keep := min(10000, max(1, b.N/5))
	path := filepath.Join(b.TempDir(), "inboxd.db")
	clk := corpus.NewClock(time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC))
	db, boot, _ := openRunning(b, Options{Path: path, NoFsync: true, Now: clk.Now, MaxMessages: keep, EventRetention: steadyWindow})
	ctx := context.Background()
	mb := func(p string) float64 {
		if fi, err := os.Stat(p); err == nil {
			return float64(fi.Size()) / (1 << 20)
		}
		return 0
	}
	var quarter [4]float64
	for i := range b.N {
		in := benchMessage(boot.Inbox.ID, i, 4<<10)
		in.ReceivedAt = clk.Now()
		if _, err := db.Ingest(ctx, in); err != nil {
			b.Fatal(err)
		}
		clk.Advance(steadyWindow / time.Duration(keep))
		if i%1000 == 999 || i == b.N-1 {
			if _, err := db.PruneNow(ctx); err != nil {
				b.Fatal(err)
			}
		}
		if q := (i + 1) * 4 / b.N; (i+1)*4%b.N < 4 && q >= 1 && quarter[q-1] == 0 {
			quarter[q-1] = mb(path) + mb(path+"-wal")
		}
	}
	b.StopTimer()
	for q, v := range quarter {
		b.ReportMetric(v, fmt.Sprintf("MB-at-%d%%", 25*(q+1)))
	}
	b.ReportMetric(mb(path+"-wal"), "MB-wal-at-end")
	if quarter[1] > 0 {
		b.ReportMetric(100*(quarter[3]-quarter[1])/quarter[1], "%-growth-half-to-end")
	}
	var messages, events, threads int
	for q, v := range map[string]*int{"messages": &messages, "events": &events, "threads": &threads} {
		if err := db.r.QueryRow(`SELECT count(*) FROM ` + q).Scan(v); err != nil {
			b.Fatal(err)
		}
	}
	if messages != keep || events > keep+1000 || threads > messages {
		b.Errorf("at the end: %d messages (keep %d), %d events, %d threads", messages, keep, events, threads)
	}
}

// latencyArm is one side of an alternated latency benchmark: a database
// in its steady state, and whether retention rounds run during its turns.
type latencyArm struct {
	name          string
	db            *DB
	inbox         string
	clk           *corpus.Clock
	keep          int
	prune         bool
	next          int // the next message number
	p50, p99, cpu []float64
	all           []time.Duration // every turn's latencies, for the pooled p99
}

// openArm opens a database for a latency benchmark and fills it to its
// steady state (keep messages, retention caught up). init, when set,
// prepares the file before Open (to choose its auto_vacuum, say).
func openArm(b *testing.B, name string, keep int, prune bool, init func(path string)) *latencyArm {
	path := filepath.Join(b.TempDir(), "inboxd.db")
	if init != nil {
		init(path)
	}
	clk := corpus.NewClock(time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC))
	db, boot, _ := openRunning(b, Options{Path: path, NoFsync: true, Now: clk.Now, MaxMessages: keep, EventRetention: steadyWindow})
	a := &latencyArm{name: name, db: db, inbox: boot.Inbox.ID, clk: clk, keep: keep, prune: prune}
	ctx := context.Background()
	for range keep + keep/2 {
		a.ingest(b)
		if a.next%500 == 0 {
			if _, err := db.PruneNow(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
	a.catchUp(b)
	return a
}

func (a *latencyArm) message() *Incoming {
	in := benchMessage(a.inbox, a.next, 4<<10)
	a.next++
	return in
}

func (a *latencyArm) ingest(b *testing.B) {
	in := a.message()
	in.ReceivedAt = a.clk.Now()
	a.clk.Advance(steadyWindow / time.Duration(a.keep))
	if _, err := a.db.Ingest(context.Background(), in); err != nil {
		b.Fatal(err)
	}
}

// catchUp runs retention rounds until one finds nothing left.
func (a *latencyArm) catchUp(b *testing.B) {
	for {
		p, err := a.db.PruneNow(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		if p.Messages == 0 && p.Events == 0 && p.Pages == 0 {
			return
		}
	}
}

// roundEvery is how many messages of a latency turn go between two
// retention rounds.
const roundEvery = 250

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// turn offers n messages to a at one every gap (an open loop: a message's
// latency counts from when it was due, so a stalled writer delays the
// ones behind it too), with retention rounds running back to back
// meanwhile (one every roundEvery messages) when a.prune, and records the latencies' p50 and p99 and the
// CPU time per message.
func (a *latencyArm) turn(b *testing.B, n int, gap time.Duration) {
	ctx := context.Background()
	msgs := make([]*Incoming, n)
	for i := range msgs {
		msgs[i] = a.message() // parsed before, as SMTP sessions parse in parallel
	}
	lat := make([]time.Duration, n)
	// Retention rounds, when a.prune: one every roundEvery messages, as
	// the writer's every 15 s (one at a time; a round still running when
	// the next is due makes that one wait).
	kick := make(chan struct{}, n/roundEvery+1)
	var pruner sync.WaitGroup
	if a.prune {
		pruner.Go(func() {
			for range kick {
				if _, err := a.db.PruneNow(ctx); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	cpu := cpuTime()
	var wg sync.WaitGroup
	start := time.Now()
	for i, in := range msgs {
		due := start.Add(time.Duration(i) * gap)
		time.Sleep(time.Until(due))
		in.ReceivedAt = a.clk.Now()
		a.clk.Advance(steadyWindow / time.Duration(a.keep))
		if i%roundEvery == roundEvery-1 {
			kick <- struct{}{}
		}
		wg.Go(func() {
			if _, err := a.db.Ingest(ctx, in); err != nil {
				b.Error(err)
			}
			lat[i] = time.Since(due)
		})
	}
	wg.Wait()
	close(kick)
	pruner.Wait()
	a.cpu = append(a.cpu, float64((cpuTime()-cpu).Microseconds())/float64(n))
	slices.Sort(lat)
	a.all = append(a.all, lat...)
	a.p50 = append(a.p50, float64(lat[n/2].Microseconds())/1000)
	a.p99 = append(a.p99, float64(lat[n*99/100].Microseconds())/1000)
	if !a.prune {
		a.catchUp(b) // the next turn starts from the steady state again
	}
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

// alternate runs turns of per messages on each arm in turn, rounds times,
// at a rate of half what one ingest at a time manages on the first arm,
// and reports each arm's median p50, p99 and CPU per message, and the
// second arm's p99 and CPU over the first's.
func alternate(b *testing.B, arms []*latencyArm, per int) {
	// The gap: twice the mean time of one ingest at a time, so the writer
	// is about half busy without retention.
	start := time.Now()
	for range 200 {
		arms[0].ingest(b)
	}
	arms[0].catchUp(b)
	gap := 2 * time.Since(start) / 200
	rounds := max(3, b.N/per/len(arms))
	b.ResetTimer()
	for r := range rounds {
		for k := range arms {
			arms[(r+k)%len(arms)].turn(b, per, gap) // which goes first alternates too
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(gap.Microseconds())/1000, "ms-gap")
	for _, a := range arms {
		b.ReportMetric(median(a.p50), "ms-p50-"+a.name)
		b.ReportMetric(median(a.p99), "ms-p99-"+a.name)
		b.ReportMetric(median(a.cpu), "µs-cpu/msg-"+a.name)
	}
	first, second := arms[0], arms[1]
	b.ReportMetric(median(second.p99)/median(first.p99), "p99-"+second.name+"/"+first.name)
	// A turn's p99 is its 10th-worst latency, which scheduling noise
	// moves 3× from turn to turn on this machine; the p99 of every
	// latency of an arm is the steadier figure.
	pooled := make([]float64, len(arms))
	for i, a := range arms {
		slices.Sort(a.all)
		pooled[i] = float64(a.all[len(a.all)*99/100].Microseconds()) / 1000
		b.ReportMetric(pooled[i], "ms-pooled-p99-"+a.name)
	}
	b.ReportMetric(pooled[1]/pooled[0], "pooled-p99-"+second.name+"/"+first.name)
	b.ReportMetric(median(second.cpu)/median(first.cpu), "cpu-"+second.name+"/"+first.name)
	for _, a := range arms {
		b.Logf("%s: p50 %v p99 %v cpu µs/msg %v", a.name, a.p50, a.p99, a.cpu)
	}
}

// BenchmarkRetentionIngestLatency measures ingest latency at steady state
// (an inbox kept at its 5,000 newest, event-log retention on) with
// retention rounds running back to back ("prune") and without ("off": the
// rounds run between turns, unmeasured), in alternated turns of 1,000
// messages offered at a fixed rate (half of what one ingest at a time
// manages), and reports median p50/p99 and CPU per message of each, and
// their ratios. -benchtime 12000x gives 6 turns each (2,000 at least).
func BenchmarkRetentionIngestLatency(b *testing.B) {
	if b.N < 2000 {
		return // the framework's first run, b.N = 1: not worth the setup
	}
	off := openArm(b, "off", 5000, false, nil)
	on := openArm(b, "prune", 5000, true, nil)
	alternate(b, []*latencyArm{off, on}, 1000)
}

// BenchmarkRetentionAutoVacuum measures what auto_vacuum=INCREMENTAL (and
// the incremental vacuum after pruning) costs ingest: two databases in
// the same steady state with retention running, one made with
// auto_vacuum=NONE (as before, its freed pages only reused), in
// alternated turns as BenchmarkRetentionIngestLatency's.
func BenchmarkRetentionAutoVacuum(b *testing.B) {
	if b.N < 2000 {
		return // the framework's first run, b.N = 1: not worth the setup
	}
	none := openArm(b, "none", 5000, true, func(path string) {
		// A file made before Open keeps its mode: Open's pragma only
		// chooses it for a new one.
		c, err := sql.Open("sqlite", "file:"+path+"?_pragma=auto_vacuum(NONE)&_pragma=journal_mode(WAL)")
		if err == nil {
			_, err = c.Exec(`CREATE TABLE t (x); DROP TABLE t`)
		}
		if err != nil {
			b.Fatal(err)
		}
		c.Close()
	})
	var mode int
	if err := none.db.r.QueryRow(`PRAGMA auto_vacuum`).Scan(&mode); err != nil || mode != 0 {
		b.Fatalf("auto_vacuum %d %v, want 0", mode, err)
	}
	incr := openArm(b, "incremental", 5000, true, nil)
	alternate(b, []*latencyArm{none, incr}, 1000)
}

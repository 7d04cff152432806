// Package loadstat is the latency recording and the text/JSON report shared
// by the load tools: each tool records one latency (and its byte count) per
// operation, or an error under a short code, and prints the same report.
package loadstat

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"
)

// Recorder collects latencies and errors per operation. It is safe for
// concurrent use.
type Recorder struct {
	mu  sync.Mutex
	ops map[string]*op
}

type op struct {
	lat    []time.Duration
	bytes  int64
	errors map[string]int
}

// NewRecorder returns an empty Recorder.
func NewRecorder() *Recorder { return &Recorder{ops: map[string]*op{}} }

func (r *Recorder) op(name string) *op {
	o := r.ops[name]
	if o == nil {
		o = &op{errors: map[string]int{}}
		r.ops[name] = o
	}
	return o
}

// Observe records one successful operation that took d and moved n bytes.
func (r *Recorder) Observe(name string, d time.Duration, n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	o := r.op(name)
	o.lat = append(o.lat, d)
	o.bytes += int64(n)
}

// Fail records one failed operation under code (an SMTP reply code, an
// HTTP status, or a word such as "net").
func (r *Recorder) Fail(name, code string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.op(name).errors[code]++
}

// Report is the outcome of one run, as printed and as written to JSON.
type Report struct {
	Tool    string         `json:"tool"`
	Params  map[string]any `json:"params"`
	Elapsed float64        `json:"elapsed_s"`
	Ops     []Op           `json:"ops"`
}

// Op is the summary of one operation. Latencies are in milliseconds.
type Op struct {
	Name     string         `json:"name"`
	Count    int            `json:"count"`
	PerSec   float64        `json:"per_s"`
	MBPerSec float64        `json:"mb_per_s"`
	P50      float64        `json:"p50_ms"`
	P90      float64        `json:"p90_ms"`
	P99      float64        `json:"p99_ms"`
	Max      float64        `json:"max_ms"`
	Errors   map[string]int `json:"errors"`
}

// Report summarizes what was recorded over elapsed: operations sorted by
// name and, when there are several, a last row "all" over every one.
func (r *Recorder) Report(tool string, params map[string]any, elapsed time.Duration) Report {
	r.mu.Lock()
	defer r.mu.Unlock()
	rep := Report{Tool: tool, Params: params, Elapsed: elapsed.Seconds(), Ops: []Op{}}
	all := &op{errors: map[string]int{}}
	for name, o := range r.ops {
		rep.Ops = append(rep.Ops, o.summary(name, elapsed))
		all.lat = append(all.lat, o.lat...)
		all.bytes += o.bytes
		for code, n := range o.errors {
			all.errors[code] += n
		}
	}
	sort.Slice(rep.Ops, func(i, j int) bool { return rep.Ops[i].Name < rep.Ops[j].Name })
	if len(rep.Ops) > 1 {
		rep.Ops = append(rep.Ops, all.summary("all", elapsed))
	}
	return rep
}

func (o *op) summary(name string, elapsed time.Duration) Op {
	lat := slices.Clone(o.lat)
	slices.Sort(lat)
	return Op{
		Name: name, Count: len(lat),
		PerSec:   float64(len(lat)) / elapsed.Seconds(),
		MBPerSec: float64(o.bytes) / 1e6 / elapsed.Seconds(),
		P50:      ms(Percentile(lat, 50)), P90: ms(Percentile(lat, 90)),
		P99: ms(Percentile(lat, 99)), Max: ms(Percentile(lat, 100)),
		Errors: o.errors,
	}
}

// Percentile returns the nearest-rank p-th percentile of sorted (0 when
// empty): the smallest value at or below which p percent of the values lie.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p/100*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

func ms(d time.Duration) float64 { return math.Round(float64(d)/1e3) / 1e3 }

// WriteText prints the report as a table.
func (rep Report) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "%s: %.1fs", rep.Tool, rep.Elapsed)
	keys := make([]string, 0, len(rep.Params))
	for k := range rep.Params {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(w, " %s=%v", k, rep.Params[k])
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "op\tcount\tper s\tMB/s\tp50 ms\tp90 ms\tp99 ms\tmax ms\terrors\t")
	for _, o := range rep.Ops {
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%s\t\n",
			o.Name, o.Count, o.PerSec, o.MBPerSec, o.P50, o.P90, o.P99, o.Max, errorText(o.Errors))
	}
	return tw.Flush()
}

func errorText(errs map[string]int) string {
	if len(errs) == 0 {
		return "0"
	}
	var parts []string
	for code, n := range errs {
		parts = append(parts, fmt.Sprintf("%s×%d", code, n))
	}
	slices.Sort(parts)
	return strings.Join(parts, " ")
}

// WriteJSONFile writes the report as indented JSON to path.
func (rep Report) WriteJSONFile(path string) error {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return fmt.Errorf("encode report: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}

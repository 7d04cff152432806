package loadstat

import (
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	ms := func(ns ...int) []time.Duration {
		var out []time.Duration
		for _, n := range ns {
			out = append(out, time.Duration(n)*time.Millisecond)
		}
		return out
	}
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = i + 1
	}
	for _, tc := range []struct {
		sorted []time.Duration
		p      float64
		want   time.Duration
	}{
		{nil, 99, 0},
		{ms(7), 50, 7 * time.Millisecond},
		{ms(7), 100, 7 * time.Millisecond},
		{ms(1, 2, 3, 4), 50, 2 * time.Millisecond},
		{ms(1, 2, 3, 4), 51, 3 * time.Millisecond},
		{ms(hundred...), 99, 99 * time.Millisecond},
		{ms(hundred...), 100, 100 * time.Millisecond},
		{ms(hundred...), 0, 1 * time.Millisecond},
	} {
		if got := Percentile(tc.sorted, tc.p); got != tc.want {
			t.Errorf("Percentile(%v, %v) = %v, want %v", tc.sorted, tc.p, got, tc.want)
		}
	}
}

func TestReport(t *testing.T) {
	r := NewRecorder()
	r.Observe("a", 2*time.Millisecond, 1e6)
	r.Observe("a", 4*time.Millisecond, 1e6)
	r.Observe("b", 1*time.Millisecond, 0)
	r.Fail("b", "500")
	r.Fail("a", "500")
	rep := r.Report("t", nil, 2*time.Second)
	if len(rep.Ops) != 3 || rep.Ops[0].Name != "a" || rep.Ops[1].Name != "b" || rep.Ops[2].Name != "all" {
		t.Fatalf("ops %+v", rep.Ops)
	}
	a, all := rep.Ops[0], rep.Ops[2]
	if a.Count != 2 || a.PerSec != 1 || a.MBPerSec != 1 || a.P50 != 2 || a.Max != 4 || a.Errors["500"] != 1 {
		t.Errorf("a = %+v", a)
	}
	if all.Count != 3 || all.P50 != 2 || all.Max != 4 || all.Errors["500"] != 2 {
		t.Errorf("all = %+v", all)
	}
}

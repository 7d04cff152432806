package message

import (
	"os"
	"strings"
	"testing"
	"time"
)

func TestZZExplore2(t *testing.T) {
	want := strings.Split(os.Getenv("SHAPES"), ",")
	for _, s := range exploreShapes() {
		ok := false
		for _, w := range want {
			ok = ok || w == s.name
		}
		if !ok {
			continue
		}
		line := s.name
		for _, n := range []int{64 << 10, 128 << 10, 256 << 10, 512 << 10, 1 << 20, 2 << 20} {
			raw := []byte(s.gen(n))
			best := time.Hour
			for r := 0; r < 3; r++ {
				start := time.Now()
				Parse(raw)
				if d := time.Since(start); d < best {
					best = d
				}
			}
			line += " " + best.Round(10*time.Microsecond).String()
		}
		t.Log(line)
	}
}

package spool

import (
	"bytes"
	"io"
	"os"
	"runtime"
	"testing"
	"testing/iotest"
)

func TestBufferStaysInMemoryWhileSmall(t *testing.T) {
	d, err := New(t.TempDir(), 64)
	if err != nil {
		t.Fatal(err)
	}
	for _, hint := range []int{0, 10, 64, 1000} {
		b := d.Buffer(hint)
		want := bytes.Repeat([]byte("x"), 64)
		if _, err := b.ReadFrom(iotest.HalfReader(bytes.NewReader(want))); err != nil {
			t.Fatal(err)
		}
		got, ok := b.Bytes()
		if !ok || !bytes.Equal(got, want) || b.Len() != 64 {
			t.Errorf("hint %d: Bytes() = %d bytes, %v; Len %d", hint, len(got), ok, b.Len())
		}
		b.Close()
	}
}

func TestBufferSpillsToAFileAndReadsBack(t *testing.T) {
	dir := t.TempDir()
	d, err := New(dir, 1000)
	if err != nil {
		t.Fatal(err)
	}
	want := make([]byte, 3<<20)
	for i := range want {
		want[i] = byte(i * 7)
	}
	for _, hint := range []int{0, 500, len(want)} {
		b := d.Buffer(hint)
		// Part through Write, the rest through ReadFrom.
		if _, err := b.Write(want[:700]); err != nil {
			t.Fatal(err)
		}
		if _, err := b.ReadFrom(iotest.OneByteReader(bytes.NewReader(want[700:1001]))); err != nil {
			t.Fatal(err)
		}
		if _, err := b.ReadFrom(bytes.NewReader(want[1001:])); err != nil {
			t.Fatal(err)
		}
		if _, ok := b.Bytes(); ok {
			t.Fatalf("hint %d: 3 MB still in memory", hint)
		}
		if b.Len() != int64(len(want)) {
			t.Fatalf("Len = %d", b.Len())
		}
		for range 2 { // readable more than once
			got, err := io.ReadAll(b.Reader())
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("hint %d: read back %d bytes, %v", hint, len(got), err)
			}
		}
		// The file was unlinked at creation: a crash leaves nothing.
		if ents, _ := os.ReadDir(dir); len(ents) != 0 {
			t.Errorf("spool dir holds %d entries", len(ents))
		}
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		if b.Len() != 0 {
			t.Error("Close left content")
		}
	}
}

func TestNilDirNeverSpills(t *testing.T) {
	var d *Dir
	b := d.Buffer(0)
	want := bytes.Repeat([]byte("y"), 1<<20)
	if _, err := b.ReadFrom(bytes.NewReader(want)); err != nil {
		t.Fatal(err)
	}
	if got, ok := b.Bytes(); !ok || !bytes.Equal(got, want) {
		t.Fatal("nil Dir spilled or lost bytes")
	}
}

func TestNewClearsLeftovers(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(dir+"/spool-1", []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := New(dir, 10); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("leftover spool files kept: %d", len(ents))
	}
}

// TestReadFromAroundChunkEdges: ReadFrom reads into 64 KB chunks before it
// knows the size; every size around a chunk's edge and the memory limit
// reads back whole, however the source splits it, with or without a hint.
func TestReadFromAroundChunkEdges(t *testing.T) {
	const memMax = 3*chunkSize + 100
	d, err := New(t.TempDir(), memMax)
	if err != nil {
		t.Fatal(err)
	}
	src := make([]byte, 5*chunkSize)
	for i := range src {
		src[i] = byte(i*13 + i>>16)
	}
	readers := map[string]func(io.Reader) io.Reader{
		"whole":      func(r io.Reader) io.Reader { return r },
		"half":       iotest.HalfReader,
		"data error": func(r io.Reader) io.Reader { return iotest.DataErrReader(r) },
	}
	for _, size := range []int{0, 1, chunkSize - 1, chunkSize, chunkSize + 1, 2*chunkSize + 7, memMax, memMax + 1, 5 * chunkSize} {
		for _, hint := range []int{0, size / 2, size} {
			for name, wrap := range readers {
				want := src[:size]
				b := d.Buffer(hint)
				n, err := b.ReadFrom(wrap(bytes.NewReader(want)))
				if err != nil || n != int64(size) || b.Len() != int64(size) {
					t.Fatalf("size %d, hint %d, %s: ReadFrom = %d, %v; Len %d", size, hint, name, n, err, b.Len())
				}
				got, err := io.ReadAll(b.Reader())
				if err != nil || !bytes.Equal(got, want) {
					t.Fatalf("size %d, hint %d, %s: read back %d bytes, %v", size, hint, name, len(got), err)
				}
				if _, inMem := b.Bytes(); inMem != (size <= memMax) {
					t.Errorf("size %d, hint %d, %s: in memory %v, limit %d", size, hint, name, inMem, memMax)
				}
				b.Close()
			}
		}
	}
}

// TestReadFromAllocatesTheSize: without a size hint, a message read into
// memory costs about its own size in allocations, not the sum of a
// doubling series (12 KB for 4.2 KB, 252 KB for 65 KB).
func TestReadFromAllocatesTheSize(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts under the race detector say nothing about a normal build")
	}
	d, err := New(t.TempDir(), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	for _, size := range []int{4200, 65 << 10} {
		want := bytes.Repeat([]byte("m"), size)
		read := func() {
			b := d.Buffer(0)
			if _, err := b.ReadFrom(bytes.NewReader(want)); err != nil {
				t.Fatal(err)
			}
			b.Close()
		}
		read() // the chunk pool's first chunk
		var before, after runtime.MemStats
		const rounds = 50
		runtime.ReadMemStats(&before)
		for range rounds {
			read()
		}
		runtime.ReadMemStats(&after)
		if per := int(after.TotalAlloc-before.TotalAlloc) / rounds; per > size*5/4+512 {
			t.Errorf("%d bytes read: %d bytes allocated per read, want about %d", size, per, size)
		}
	}
}

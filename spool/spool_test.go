package spool

import (
	"bytes"
	"io"
	"os"
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

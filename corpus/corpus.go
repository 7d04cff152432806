// Package corpus holds the fixtures that tests of several packages share:
// it locates the public real-world mail corpora (CPython's test_email data,
// enmime's testdata; .ci/run installs them) and parses the threading rule
// table. Tests only.
package corpus

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// Dirs returns the corpus directories found on this machine, by name
// ("cpython", "enmime", "enmime+" for a second enmime version, …).
func Dirs() map[string]string {
	dirs := map[string]string{}
	cpy := os.Getenv("INBOXD_CPYTHON_EMAIL_DATA")
	if cpy == "" {
		for _, py := range []string{"python3", "python3.11", "python3.12", "python3.13"} {
			out, err := exec.Command(py, "-c", "import test.test_email,os;print(os.path.dirname(test.test_email.__file__))").Output()
			if err == nil {
				cpy = filepath.Join(strings.TrimSpace(string(out)), "data")
				break
			}
		}
	}
	if cpy == "" {
		// Debian's libpython3.X-testsuite installs the data here.
		if m, _ := filepath.Glob("/usr/lib/python3*/test/test_email/data"); len(m) > 0 {
			cpy = m[len(m)-1]
		}
	}
	if st, err := os.Stat(cpy); cpy != "" && err == nil && st.IsDir() {
		dirs["cpython"] = cpy
	}
	if out, err := exec.Command("go", "env", "GOMODCACHE").Output(); err == nil {
		cache := strings.TrimSpace(string(out))
		matches, _ := filepath.Glob(filepath.Join(cache, "github.com", "jhillyerd", "enmime*", "testdata"))
		more, _ := filepath.Glob(filepath.Join(cache, "github.com", "jhillyerd", "enmime", "v*", "testdata"))
		for i, m := range append(matches, more...) {
			dirs["enmime"+strings.Repeat("+", i)] = m
		}
	}
	return dirs
}

// Require returns the corpora, skipping the test when one is missing on a
// developer machine and failing it under CI=true, where .ci/run installs
// them.
func Require(t testing.TB) map[string]string {
	t.Helper()
	dirs := Dirs()
	if dirs["cpython"] == "" || dirs["enmime"] == "" {
		msg := "MIME corpora not found (CPython test_email data and/or enmime testdata); see .ci/run"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return dirs
}

// Messages lists the mail files of a corpus directory, sorted.
func Messages(name, dir string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if name == "cpython" && !strings.HasPrefix(d.Name(), "msg_") {
			return nil // images and sounds for other tests
		}
		files = append(files, path)
		return nil
	})
	sort.Strings(files)
	return files, err
}

// RuleMessage is one arrival in a threading rule case.
type RuleMessage struct {
	Own        string
	InReplyTo  []string
	References []string
	Thread     string // expected label: T1, T2, … in creation order
	Match      string // expected thread_match
}

// RuleCase is one named case of thread/testdata/rules.txt.
type RuleCase struct {
	Name     string
	Messages []RuleMessage
}

// ThreadingRules parses the threading rule table shared by the thread and
// store tests (format described at the top of the file).
func ThreadingRules(path string) ([]RuleCase, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var cases []RuleCase
	for n, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
			continue
		case strings.HasPrefix(line, "case:"):
			cases = append(cases, RuleCase{Name: strings.TrimSpace(strings.TrimPrefix(line, "case:"))})
			continue
		}
		f := strings.Split(line, "|")
		if len(f) != 5 || len(cases) == 0 {
			return nil, fmt.Errorf("%s:%d: want a case: line, then own | irt | refs | thread | match", path, n+1)
		}
		c := &cases[len(cases)-1]
		c.Messages = append(c.Messages, RuleMessage{
			Own: strings.TrimSpace(f[0]), InReplyTo: strings.Fields(f[1]), References: strings.Fields(f[2]),
			Thread: strings.TrimSpace(f[3]), Match: strings.TrimSpace(f[4]),
		})
	}
	return cases, nil
}

// ThreadingRoot is the directory .ci/corpora unpacks the threading corpora
// into: $INBOXD_THREAD_CORPORA when set, else the first of
// /var/cache/inboxd-corpora and ~/.cache/inboxd-corpora that holds them.
func ThreadingRoot() string {
	if d := os.Getenv("INBOXD_THREAD_CORPORA"); d != "" {
		return d
	}
	dirs := []string{"/var/cache/inboxd-corpora"}
	if home, err := os.UserHomeDir(); err == nil {
		dirs = append(dirs, filepath.Join(home, ".cache", "inboxd-corpora"))
	}
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "notmuch", ".complete")); err == nil {
			return d
		}
	}
	return dirs[0]
}

// Mail is one message of a threading corpus, as the corpus holds it.
type Mail struct {
	Name string // file path, or "mbox-path#n" for the n-th message of an mbox
	Raw  []byte
}

// Mailbox is one threading corpus, its messages in the corpus's own order
// (sorted file paths; mbox order).
type Mailbox struct {
	Name  string
	Mails []Mail
}

// notmuchCorpora are the directories of notmuch's test/corpora that are about
// threading (the others exercise MIME, crypto and indexing).
var notmuchCorpora = []string{"default", "lkml", "threading", "broken", "duplicate"}

// Threading returns the threading corpora under root: notmuch's corpora
// ("notmuch-default", …) and Mail::Thread's mboxes ("mail-thread-testbox",
// "mail-thread-testbox-2", …). It fails when any of them is missing.
func Threading(root string) ([]Mailbox, error) {
	var out []Mailbox
	for _, name := range notmuchCorpora {
		dir := filepath.Join(root, "notmuch", "test", "corpora", name)
		files, err := Messages(name, dir)
		if err != nil {
			return nil, fmt.Errorf("notmuch corpus %s: %w", name, err)
		}
		if len(files) == 0 {
			return nil, fmt.Errorf("notmuch corpus %s: no messages in %s", name, dir)
		}
		mb := Mailbox{Name: "notmuch-" + name}
		for _, f := range files {
			raw, err := os.ReadFile(f)
			if err != nil {
				return nil, err
			}
			mb.Mails = append(mb.Mails, Mail{Name: f, Raw: raw})
		}
		out = append(out, mb)
	}
	boxes, _ := filepath.Glob(filepath.Join(root, "mail-thread", "t", "testbox*"))
	if len(boxes) == 0 {
		return nil, fmt.Errorf("Mail::Thread testboxes not found under %s", root)
	}
	sort.Strings(boxes)
	for _, b := range boxes {
		data, err := os.ReadFile(b)
		if err != nil {
			return nil, err
		}
		mb := Mailbox{Name: "mail-thread-" + filepath.Base(b)}
		for i, raw := range SplitMbox(data) {
			mb.Mails = append(mb.Mails, Mail{Name: fmt.Sprintf("%s#%d", b, i+1), Raw: raw})
		}
		out = append(out, mb)
	}
	return out, nil
}

// RequireThreading returns the threading corpora, skipping the test when
// they are missing on a developer machine and failing it under CI=true.
func RequireThreading(t testing.TB) []Mailbox {
	t.Helper()
	root := ThreadingRoot()
	boxes, err := Threading(root)
	if err != nil {
		msg := fmt.Sprintf("threading corpora not found (%v); run .ci/corpora", err)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return boxes
}

// SplitMbox splits an mbox the way Mail::Thread's tests read theirs: every
// line that starts with "From " begins a message, and that From_ line is
// not part of it. A line ">From " is unescaped to "From " (mboxo).
func SplitMbox(data []byte) [][]byte {
	var out [][]byte
	var cur []byte
	started := false
	for len(data) > 0 {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line = data[:i+1]
		}
		data = data[len(line):]
		switch {
		case bytes.HasPrefix(line, []byte("From ")):
			if started {
				out = append(out, cur)
			}
			cur, started = nil, true
			continue
		case bytes.HasPrefix(line, []byte(">From ")):
			line = line[1:]
		}
		if started {
			cur = append(cur, line...)
		}
	}
	if started {
		out = append(out, cur)
	}
	return out
}

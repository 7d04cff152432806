package message

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// corpusDirs finds the public MIME corpora the parser is checked against:
// CPython's test_email data and enmime's testdata (see .ci/run for how CI
// installs them).
func corpusDirs(t *testing.T) map[string]string {
	t.Helper()
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
		matches, _ := filepath.Glob(filepath.Join(strings.TrimSpace(string(out)), "github.com", "jhillyerd", "enmime*", "testdata"))
		more, _ := filepath.Glob(filepath.Join(strings.TrimSpace(string(out)), "github.com", "jhillyerd", "enmime", "v*", "testdata"))
		matches = append(matches, more...)
		for i, m := range matches {
			dirs["enmime"+strings.Repeat("+", i)] = m
		}
	}
	return dirs
}

func TestParseCorpus(t *testing.T) {
	dirs := corpusDirs(t)
	_, haveCPython := dirs["cpython"]
	_, haveEnmime := dirs["enmime"]
	if !haveCPython || !haveEnmime {
		msg := "MIME corpora not found (CPython test_email data and/or enmime testdata); see .ci/run"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	for name, dir := range dirs {
		files, withErr, empty := 0, 0, 0
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			if name == "cpython" && !strings.HasPrefix(d.Name(), "msg_") {
				return nil // images and sounds for other tests
			}
			raw, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			files++
			p := Parse(raw)
			if strings.Contains(p.ParseError, "panicked") {
				t.Errorf("%s: %s", path, p.ParseError)
			}
			if p.ParseError != "" {
				withErr++
				if testing.Verbose() {
					t.Logf("%s: %s", path, p.ParseError)
				}
			}
			if !p.HasText && !p.HasHTML && len(p.Attachments) == 0 && p.ParseError == "" {
				empty++
				t.Errorf("%s: no text, no html, no attachments and no parse error", path)
			}
			checkInvariants(t, path, p)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s (%s): %d files, %d with parse_error, %d empty", name, dir, files, withErr, empty)
		if files == 0 {
			t.Errorf("%s: no files in %s", name, dir)
		}
	}
}

// Package corpus locates the public real-world mail corpora that tests run
// against: CPython's test_email data and enmime's testdata. Tests only; see
// .ci/run for how CI installs them.
package corpus

import (
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

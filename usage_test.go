package main

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
)

// --help, help and CMD --help succeed with a usage on standard output;
// --version and version print the version; a mistake is one line that
// says where the usage is.
func TestUsageAndVersion(t *testing.T) {
	noEnv := func(string) string { return "" }
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"--help"}, []string{"Usage:", "inboxd backup FILE", "--smtp-addr (INBOXD_SMTP_ADDR"}},
		{[]string{"-h"}, []string{"Usage:"}},
		{[]string{"help"}, []string{"Usage:"}},
		{[]string{"serve", "--help"}, []string{"Usage:\n  inboxd [serve] [flags]", "--http-addr"}},
		{[]string{"inboxes", "create", "--help"}, []string{"inboxd inboxes create ADDRESS", "--display-name", "--data (INBOXD_DATA"}},
		{[]string{"keys", "create", "--help"}, []string{"--scopes"}},
		{[]string{"keys", "--help"}, []string{"inboxd keys create", "inboxd keys list", "inboxd keys revoke KEY_ID"}},
		{[]string{"inboxes", "-h"}, []string{"inboxd inboxes create ADDRESS", "inboxd inboxes delete", "inboxd inboxes list"}},
		{[]string{"send", "--help"}, []string{"inboxd send --to ADDRESS", "--idempotency-key"}},
		{[]string{"backup", "--help"}, []string{"inboxd backup FILE"}},
		{[]string{"mcp", "--help"}, []string{"inboxd mcp --url URL --key KEY", "--key (INBOXD_KEY"}},
		{[]string{"healthcheck", "--help"}, []string{"inboxd healthcheck", "--url"}},
		{[]string{"version", "--help"}, []string{"Usage:\n  inboxd version"}},
		{[]string{"--version"}, []string{"inboxd ", "go1."}},
		{[]string{"version"}, []string{"inboxd ", "go1."}},
	} {
		var out bytes.Buffer
		if err := run(context.Background(), c.args, noEnv, &out, io.Discard); err != nil {
			t.Errorf("%v: %v", c.args, err)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(out.String(), w) {
				t.Errorf("%v: output lacks %q:\n%s", c.args, w, out.String())
			}
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--bogus"}, "unknown flag --bogus (see: inboxd serve --help)"},
		{[]string{"send", "--nope"}, "unknown flag --nope (see: inboxd send --help)"},
		{[]string{"send", "--to"}, "flag --to needs a value (see: inboxd send --help)"},
		{[]string{"frob"}, `unknown command "frob" (see: inboxd --help)`},
	} {
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), c.args, noEnv, &stdout, &stderr)
		if err == nil || err.Error() != c.want || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
		if stdout.Len()+stderr.Len() != 0 {
			t.Errorf("%v printed besides the error:\n%s%s", c.args, stdout.String(), stderr.String())
		}
	}
}

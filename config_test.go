package main

import (
	"io"
	"testing"
	"time"
)

// --retention and --event-retention take days as they are usually said
// (SPEC §13: "30d") besides Go's durations; anything else is refused.
func TestRetentionFlagsTakeDays(t *testing.T) {
	for _, tc := range []struct {
		arg  string
		want time.Duration
		ok   bool
	}{
		{"30d", 30 * 24 * time.Hour, true},
		{"1d", 24 * time.Hour, true},
		{"12h", 12 * time.Hour, true},
		{"90m", 90 * time.Minute, true},
		{"0", 0, true},
		{"1.5d", 0, false},
		{"-1d", 0, false},
		{"-1h", 0, false},
		{"d", 0, false},
		{"week", 0, false},
	} {
		for _, flag := range []string{"--retention", "--event-retention"} {
			c, _, err := serveConfig([]string{flag, tc.arg}, func(string) string { return "" }, io.Discard)
			got := c.Retention
			if flag == "--event-retention" {
				got = c.EventRetention
			}
			if (err == nil) != tc.ok || (tc.ok && got != tc.want) {
				t.Errorf("%s %s: %v, %v; want %v (ok %v)", flag, tc.arg, got, err, tc.want, tc.ok)
			}
		}
	}
	c, _, err := serveConfig(nil, func(string) string { return "" }, io.Discard)
	if err != nil || c.EventRetention != 30*24*time.Hour || c.Retention != 0 {
		t.Errorf("defaults: event retention %v, retention %v, %v", c.EventRetention, c.Retention, err)
	}
}

// The command line wins over INBOXD_* variables, also for a repeatable
// flag: given both ways it takes the command line's values only.
func TestCommandLineWinsOverEnvironment(t *testing.T) {
	env := map[string]string{"INBOXD_DOMAIN": "a.test", "INBOXD_ACCEPT": "domain", "INBOXD_SMTP_ADDR": "127.0.0.1:2600"}
	getenv := func(k string) string { return env[k] }
	c, _, err := serveConfig([]string{"--domain", "b.test", "--smtp-addr", "127.0.0.1:2601"}, getenv, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Domains) != 1 || c.Domains[0] != "b.test" || c.SMTPAddr != "127.0.0.1:2601" || c.Accept != "domain" {
		t.Errorf("domains %v, smtp %s, accept %s; want [b.test], 127.0.0.1:2601, domain", c.Domains, c.SMTPAddr, c.Accept)
	}
	c, _, err = serveConfig(nil, getenv, io.Discard)
	if err != nil || len(c.Domains) != 1 || c.Domains[0] != "a.test" {
		t.Errorf("from the environment alone: %v %v", c.Domains, err)
	}
}

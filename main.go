// Command inboxd is a mail gateway in one binary and one SQLite file: it
// receives mail over SMTP, threads it, and serves it over HTTP.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/inboxd/inboxd/store"
)

func main() {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	go watchSignals(sigs, time.Now, cancel, os.Stderr, os.Exit)
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "inboxd:", err)
		os.Exit(1)
	}
}

// forceAfter is how long after the first signal another one forces the
// exit. Sooner, it is the same request again: `timeout` and process
// managers signal the child and its process group at once, and a Ctrl-C in
// a shell that runs inboxd under another process reaches both.
const forceAfter = time.Second

// watchSignals is main's signal handling: the first signal stops the
// server gracefully (stop cancels run's context); a signal at least
// forceAfter later exits at once with code 2.
func watchSignals(sigs <-chan os.Signal, now func() time.Time, stop func(), stderr io.Writer, exit func(code int)) {
	<-sigs
	first := now()
	stop()
	for sig := range sigs {
		if now().Sub(first) >= forceAfter {
			fmt.Fprintf(stderr, "inboxd: %v again, exiting now\n", sig)
			exit(2)
			return
		}
	}
}

// run is the whole program; main only wires it to the process.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	err := dispatch(ctx, args, getenv, stdout, stderr)
	var h *helpRequested
	if errors.As(err, &h) {
		h.print(stdout)
		return nil
	}
	return err
}

// dispatch runs the command args name (serve when they start with a flag).
func dispatch(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cmd := "serve"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, args = args[0], args[1:]
	}
	if cmd == "serve" && len(args) > 0 {
		switch {
		case isHelp(args[0]):
			return help(stdout)
		case args[0] == "-version" || args[0] == "--version":
			printVersion(stdout)
			return nil
		}
	}
	switch cmd {
	case "serve":
		return serve(ctx, args, getenv, stdout, stderr)
	case "help":
		return help(stdout)
	case "version":
		if len(args) == 1 && isHelp(args[0]) {
			fmt.Fprint(stdout, "Usage:\n  inboxd version\n\nPrints the version of this build.\n")
			return nil
		}
		if len(args) > 0 {
			return fmt.Errorf("unexpected argument %q: inboxd version takes none", args[0])
		}
		printVersion(stdout)
		return nil
	case "inboxes":
		return inboxesCmd(ctx, args, getenv, stdout)
	case "keys":
		return keysCmd(ctx, args, getenv, stdout)
	case "send":
		return sendCmd(ctx, args, getenv, stdout)
	case "backup":
		return backupCmd(ctx, args, getenv, stdout)
	case "healthcheck":
		return healthcheckCmd(ctx, args, getenv, stdout)
	case "mcp":
		return mcpCmd(ctx, args, getenv, os.Stdin, stdout, stderr)
	}
	return fmt.Errorf("unknown command %q (see: inboxd --help)", cmd)
}

func help(w io.Writer) error {
	fmt.Fprint(w, `inboxd — a mail gateway: SMTP in, threads in SQLite, HTTP out.

Usage:
  inboxd [serve] [flags]                      run the server (the default)
  inboxd inboxes create ADDRESS [--display-name N] [--environment live|test]
  inboxd inboxes list
  inboxd inboxes delete ID|ADDRESS
  inboxd keys create --name N --scopes a,b [--inboxes ibx_1,ibx_2]
  inboxd keys list
  inboxd keys revoke KEY_ID
  inboxd send --to ADDRESS [--subject S] [--text T|-] [--html H] [--from INBOX] [--url URL] [--key KEY]
  inboxd backup FILE                          a consistent copy of the database, checked
  inboxd healthcheck [--url URL]              exit 0 when the running server is ready
  inboxd mcp --url URL --key KEY              a stdio MCP server for agents, forwarding to the server's /mcp
                                              (INBOXD_URL, INBOXD_KEY)
  inboxd version                              also --version
  inboxd help                                 also --help; CMD --help for one command

inboxes, keys and backup take --data DIR (INBOXD_DATA) and work whether or
not the server is running; send, healthcheck and mcp talk to a running one.

Serve flags (each also read from its environment variable; one set to "" counts as unset):
`)
	var c Config
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	serveFlags(fs, &c)
	printFlags(w, fs)
	return nil
}

func newLogger(c *Config, w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.LogLevel)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	opts := &slog.HandlerOptions{Level: level}
	if c.LogFormat == "json" {
		// slog writes a duration to JSON as integer nanoseconds; "7ms",
		// as the text format says it, is what a person reads and what
		// log tools parse as a duration.
		opts.ReplaceAttr = func(_ []string, a slog.Attr) slog.Attr {
			if a.Value.Kind() == slog.KindDuration {
				a.Value = slog.StringValue(a.Value.Duration().String())
			}
			return a
		}
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return slog.New(slog.NewTextHandler(w, opts)), nil
}

func serve(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	c, log, err := serveConfig(args, getenv, stderr)
	if err != nil {
		return err
	}
	s, err := newServer(ctx, c, log, stdout)
	if err != nil {
		return err
	}
	defer s.Close()
	return s.Run(ctx)
}

// serveConfig reads serve's flags and environment into a checked Config
// and builds its logger.
func serveConfig(args []string, getenv func(string) string, stderr io.Writer) (Config, *slog.Logger, error) {
	var c Config
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	serveFlags(fs, &c)
	if err := parseFlags(fs, args, getenv); err != nil {
		return Config{}, nil, err
	}
	if err := argCount(fs, ""); err != nil {
		return Config{}, nil, err
	}
	if len(c.ACMEDomains) > 0 {
		// A CA reaches tls-alpn-01 on port 443, and the greeting should
		// name the host the certificate is for; what was set wins.
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		if !set["http-addr"] {
			c.HTTPAddr = ":443"
		}
		if !set["hostname"] {
			c.Hostname = strings.ToLower(c.ACMEDomains[0])
		}
	}
	if err := c.validate(); err != nil {
		return Config{}, nil, fromEnv(fs, args, getenv, err)
	}
	log, err := newLogger(&c, stderr)
	if err != nil {
		return Config{}, nil, fromEnv(fs, args, getenv, err)
	}
	return c, log, nil
}

// fromEnv adds to an error about a flag that its value came from the
// flag's environment variable, when it did: an operator who set
// INBOXD_ACCEPT in a unit file has never typed --accept.
// (The FlagSet cannot tell: a variable is applied with Set, which marks
// the flag as given like the command line does.)
func fromEnv(fs *flag.FlagSet, args []string, getenv func(string) string, err error) error {
	name, ok := strings.CutPrefix(err.Error(), "--")
	if !ok {
		return err
	}
	name, _, _ = strings.Cut(name, " ")
	name = strings.TrimRight(name, ":,")
	onCommandLine := slices.ContainsFunc(args, func(a string) bool {
		n, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		return strings.HasPrefix(a, "-") && n == name
	})
	if fs.Lookup(name) == nil || onCommandLine || getenv(envName(name)) == "" {
		return err
	}
	return fmt.Errorf("%w (set by %s)", err, envName(name))
}

// writeAdminKey puts the first start's admin token, the bare token and a
// newline, at <dir>/admin.key (mode 0600), durably: written beside it,
// synced, renamed into place and the directory synced, before the
// bootstrap that made the token commits (store.BootstrapWith).
func writeAdminKey(dir, token string) error {
	f, err := os.CreateTemp(dir, ".admin.key.tmp-*")
	if err != nil {
		return fmt.Errorf("write admin key: %w", err)
	}
	defer os.Remove(f.Name()) // after the rename, nothing is there
	_, err = f.WriteString(token + "\n")
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), filepath.Join(dir, "admin.key"))
	}
	if err == nil {
		err = syncDir(dir)
	}
	if err != nil {
		return fmt.Errorf("write admin key: %w", err)
	}
	return nil
}

// printWelcome is the first start's message; base is the HTTP listener's
// URL (http://host:port, or https:// with --tls-cert).
func printWelcome(w io.Writer, dir string, b store.Bootstrapped, smtpAddr, base string) {
	host, port, _ := net.SplitHostPort(smtpAddr)
	fmt.Fprintf(w, `inboxd: first start, created
  project    %s
  admin key  %s
             (shown once; also written to %s, mode 0600)
  inbox      %s

Send it a first message:
  swaks --server %s --port %s --from you@example.com --to %s --header "Subject: hello" --body "first mail"
  python3 -c 'import smtplib; smtplib.SMTP("%s", %s).sendmail("you@example.com", ["%s"], "Subject: hello\r\n\r\nfirst mail")'

Read it in the console at %s/ (sign in with the admin key),
or over the API:
  curl -s -H "Authorization: Bearer %s" %s/v1/projects/%s/inboxes/%s/messages
MCP for agents: %s/mcp (the same keys)
`, b.ProjectID, b.AdminToken, filepath.Join(dir, "admin.key"), b.Inbox.Address,
		host, port, b.Inbox.Address, host, port, b.Inbox.Address,
		base, b.AdminToken, base, b.ProjectID, b.Inbox.ID, base)
}

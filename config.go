package main

import (
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"golang.org/x/crypto/acme/autocert"
	"golang.org/x/net/idna"

	"github.com/inboxd/inboxd/mcp"
)

// Config is every setting of `inboxd serve`, built once from flags and
// INBOXD_* environment variables.
type Config struct {
	Data     string
	SMTPAddr string
	// SMTPSAddr, when set, also serves SMTP over implicit TLS (port 465
	// style).
	SMTPSAddr string
	HTTPAddr  string
	// DebugAddr serves net/http/pprof when set; off by default.
	DebugAddr string
	// MetricsAddr serves /metrics alone when set, instead of on HTTPAddr.
	MetricsAddr string
	Hostname    string
	Fsync       bool

	MaxMessageSize     int64
	MaxRecipients      int
	MaxSessions        int
	SMTPCommandTimeout time.Duration
	SMTPSessionTimeout time.Duration
	Accept             string
	Domains            listFlag
	StoreDuplicates    bool
	// EventRetention is how long the event log keeps events (0: for ever).
	EventRetention time.Duration
	// Retention and MaxMessages bound the mail kept (0: no bound).
	Retention   time.Duration
	MaxMessages int

	// SMTPMaxSessionsPerIP caps one client address's sessions (0: no cap).
	SMTPMaxSessionsPerIP int

	TLSCert           string
	TLSKey            string
	SMTPTLSSelfSigned bool
	// ACMEDomains get their certificates from an ACME CA (autocert); the
	// first is the default for clients that name none.
	ACMEDomains       listFlag
	ACMEEmail         string
	ACMEDirectory     string
	ACMECAFile        string
	ACMEHTTPAddr      string
	SMTPAuthInsecure  bool
	SMTPAuthAcceptAny bool

	APIRateLimit    int
	HTTPBodyTimeout time.Duration
	// PublicURL is where clients reach the server behind a reverse proxy:
	// /mcp accepts its host (SPEC §11).
	PublicURL string

	Outbound string
	RelayURL string
	// DirectPort and DirectResolver are where --outbound direct reaches
	// mail exchangers (25) and asks DNS (the system's resolver when
	// empty); DKIMKeys are its signing keys, each DOMAIN:SELECTOR:FILE.
	DirectPort            string
	DirectResolver        string
	DKIMKeys              listFlag
	RelayCAFile           string
	RelayInsecure         bool
	RelayMessageIDPattern string
	RelayMessageIDFormat  string
	OutboundRetrySchedule durationList

	WebhookRetrySchedule durationList
	WebhookDenyPrivate   bool

	LogFormat       string
	LogLevel        string
	ShutdownTimeout time.Duration
}

// listFlag is a repeatable (or comma-separated) string flag.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*l = append(*l, s)
		}
	}
	return nil
}

// durationList is a comma-separated list of durations.
type durationList []time.Duration

func (l *durationList) String() string {
	s := make([]string, len(*l))
	for i, d := range *l {
		s[i] = d.String()
	}
	return strings.Join(s, ",")
}

func (l *durationList) Set(v string) error {
	*l = nil
	for _, s := range strings.Split(v, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(s))
		if err != nil || d <= 0 {
			return fmt.Errorf("%q is not a positive duration", s)
		}
		*l = append(*l, d)
	}
	return nil
}

// days is a duration flag that also takes whole days, "30d", as the
// retention flags are usually said, and prints whole days so too.
type days time.Duration

func (d *days) String() string {
	if t := time.Duration(*d); t != 0 && t%(24*time.Hour) == 0 {
		return strconv.FormatInt(int64(t/(24*time.Hour)), 10) + "d"
	}
	return time.Duration(*d).String()
}

func (d *days) Set(v string) error {
	if n, ok := strings.CutSuffix(v, "d"); ok {
		if k, err := strconv.ParseUint(n, 10, 32); err == nil {
			*d = days(time.Duration(k) * 24 * time.Hour)
			return nil
		}
	}
	t, err := time.ParseDuration(v)
	if err != nil || t < 0 {
		return fmt.Errorf("%q is not a duration like 30d or 12h", v)
	}
	*d = days(t)
	return nil
}

// serveFlags declares every serve flag on fs, writing into c.
func serveFlags(fs *flag.FlagSet, c *Config) {
	fs.StringVar(&c.Data, "data", "./inboxd-data", "data directory (holds inboxd.db and admin.key)")
	fs.StringVar(&c.SMTPAddr, "smtp-addr", "127.0.0.1:1025", "SMTP listen address (port 0 picks a free port)")
	fs.StringVar(&c.SMTPSAddr, "smtps-addr", "", "also serve SMTP over implicit TLS here (port 465 style, for clients that insist on it); needs --tls-cert/--tls-key or --smtp-tls-self-signed")
	fs.StringVar(&c.HTTPAddr, "http-addr", "127.0.0.1:8025", "HTTP listen address for the API and console (port 0 picks a free port)")
	fs.StringVar(&c.DebugAddr, "debug-addr", "", "serve Go's pprof profiles (/debug/pprof/) on this address; keep it on loopback")
	fs.Var((*days)(&c.Retention), "retention", "delete messages older than this (with their bodies, raw bytes, attachments and search rows), e.g. 30d or 12h; 0 keeps them")
	fs.IntVar(&c.MaxMessages, "max-messages", 0, "keep at most this many messages per inbox, deleting the oldest; 0 for no bound")
	c.EventRetention = 30 * 24 * time.Hour
	fs.Var((*days)(&c.EventRetention), "event-retention", "how long the event log keeps events (their webhook deliveries go with them; a cursor older than the log answers 400 invalid_cursor); 0 keeps them for ever")
	fs.StringVar(&c.MetricsAddr, "metrics-addr", "", "serve /metrics on this address alone, with no key, instead of on --http-addr beside the API (where it needs a key)")
	fs.StringVar(&c.Hostname, "hostname", "localhost", "host name announced in the SMTP greeting and Received: headers")
	fs.BoolVar(&c.Fsync, "fsync", true, "fsync every commit (synchronous=FULL); false survives a crash but maybe not a power cut")
	fs.Int64Var(&c.MaxMessageSize, "max-message-size", 25<<20, "largest accepted message in bytes (advertised in SIZE)")
	fs.IntVar(&c.MaxRecipients, "max-recipients", 100, "recipients per SMTP transaction")
	fs.IntVar(&c.MaxSessions, "max-sessions", 100, "concurrent SMTP sessions; more are refused with 421")
	fs.IntVar(&c.SMTPMaxSessionsPerIP, "smtp-max-sessions-per-ip", 32, "concurrent SMTP sessions from one client address; more are refused with 421 (0: no limit)")
	fs.DurationVar(&c.SMTPCommandTimeout, "smtp-command-timeout", 5*time.Minute, "idle time allowed between SMTP commands")
	fs.DurationVar(&c.SMTPSessionTimeout, "smtp-session-timeout", 30*time.Minute, "longest SMTP session")
	fs.StringVar(&c.Accept, "accept", "known", "RCPT policy: known (existing inboxes), domain (create inboxes at --domain), any (create any inbox)")
	fs.Var(&c.Domains, "domain", "domain whose unknown addresses create inboxes under --accept domain (repeatable)")
	fs.BoolVar(&c.StoreDuplicates, "store-duplicates", false, "store duplicate deliveries (same Message-ID, same bytes) again instead of answering \"Already stored\"")
	fs.StringVar(&c.TLSCert, "tls-cert", "", "TLS certificate file (PEM): HTTPS for the API, console and /mcp, and SMTP STARTTLS")
	fs.StringVar(&c.TLSKey, "tls-key", "", "TLS key file (PEM) of --tls-cert")
	fs.BoolVar(&c.SMTPTLSSelfSigned, "smtp-tls-self-signed", false, "offer STARTTLS with a generated self-signed certificate (SMTP only; for tests)")
	fs.Var(&c.ACMEDomains, "acme-domain", "get certificates for this domain from an ACME CA (Let's Encrypt by default) for HTTPS and SMTP STARTTLS (repeatable; the first is served to clients that send no name); --http-addr defaults to :443 and --hostname to the domain")
	fs.StringVar(&c.ACMEEmail, "acme-email", "", "contact address given to the ACME CA (expiry warnings)")
	fs.StringVar(&c.ACMEDirectory, "acme-directory", autocert.DefaultACMEDirectory, "ACME directory URL of the CA (e.g. Let's Encrypt staging, or a private CA)")
	fs.StringVar(&c.ACMECAFile, "acme-ca-file", "", "CA certificates (PEM) to verify the ACME directory's HTTPS with, for a private CA")
	fs.StringVar(&c.ACMEHTTPAddr, "acme-http-addr", ":80", "with --acme-domain: answer ACME http-01 challenges and redirect to HTTPS here; empty for none (tls-alpn-01 on the HTTPS listener suffices)")
	fs.BoolVar(&c.SMTPAuthInsecure, "smtp-auth-insecure", false, "offer SMTP AUTH without TLS")
	fs.BoolVar(&c.SMTPAuthAcceptAny, "smtp-auth-accept-any", false, "accept any SMTP AUTH credentials: an API key still authenticates with its grant, anything else gets nothing beyond an unauthenticated session")
	fs.IntVar(&c.APIRateLimit, "api-rate-limit", 60000, "requests per minute per key, REST and /mcp together (429 above it); 0 disables")
	fs.DurationVar(&c.HTTPBodyTimeout, "http-body-timeout", time.Minute, "longest time an HTTP request body may take to arrive (a slower one gets 400); 0 disables")
	fs.StringVar(&c.PublicURL, "public-url", "", "the URL clients reach this server at behind a reverse proxy (https://mail.example.com): /mcp accepts requests for its host name, which it otherwise refuses on a loopback listener")
	fs.StringVar(&c.Outbound, "outbound", "capture", "where mail to outside addresses goes: capture (kept, never sent), relay (--relay-url) or direct (each domain's MX on port 25)")
	fs.StringVar(&c.RelayURL, "relay-url", "", "smarthost for --outbound relay: smtp://user:pass@host:587 (STARTTLS) or smtps://…:465")
	fs.StringVar(&c.RelayCAFile, "relay-ca-file", "", "extra CA certificates (PEM) to verify the relay with")
	fs.BoolVar(&c.RelayInsecure, "relay-insecure", false, "allow an smtp:// relay without STARTTLS (used unverified when offered)")
	fs.StringVar(&c.RelayMessageIDPattern, "relay-message-id-pattern", "", "regexp with one group that finds a relay-assigned Message-ID in its 250 reply (SES style)")
	fs.StringVar(&c.RelayMessageIDFormat, "relay-message-id-format", "%s", "format of the relay-assigned Message-ID, e.g. %s@email.amazonses.com")
	fs.StringVar(&c.DirectPort, "direct-port", "25", "with --outbound direct: the port of the mail exchangers (25; another only for tests)")
	fs.StringVar(&c.DirectResolver, "direct-resolver", "", "with --outbound direct: the DNS server (host:port) to look up MX records with; the system's resolver when empty")
	fs.Var(&c.DKIMKeys, "dkim-key", "with --outbound direct: DOMAIN:SELECTOR:FILE, sign mail from DOMAIN with the PEM private key in FILE (RSA or Ed25519), published at SELECTOR._domainkey.DOMAIN (repeatable, or comma-separated)")
	fs.Var(&c.OutboundRetrySchedule, "outbound-retry-schedule", "delays between delivery attempts, e.g. 1s,2s (default 1m,5m,15m,30m,1h,2h,4h; the last repeats for 3 days)")
	fs.Var(&c.WebhookRetrySchedule, "webhook-retry-schedule", "delays between webhook delivery attempts, e.g. 1s,2s (default 5s,30s,2m,10m,30m,1h,3h,6h,12h,24h; then failed)")
	fs.BoolVar(&c.WebhookDenyPrivate, "webhook-deny-private", false, "refuse webhook URLs on any address that is not global unicast (loopback, private, link-local, CGNAT, documentation, …), at registration and at connect time")
	fs.StringVar(&c.LogFormat, "log-format", "text", "log format: text or json")
	fs.StringVar(&c.LogLevel, "log-level", "info", "log level: debug, info, warn, error")
	fs.DurationVar(&c.ShutdownTimeout, "shutdown-timeout", 30*time.Second, "how long a graceful shutdown waits for in-flight work")
}

// envName is the environment variable of a flag: --smtp-addr → INBOXD_SMTP_ADDR.
func envName(flagName string) string {
	return "INBOXD_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// parseFlags applies INBOXD_* variables, then the command line (which
// wins). Its errors are one line (flagError); --help is a
// *helpRequested, which run answers with the command's usage.
func parseFlags(fs *flag.FlagSet, args []string, getenv func(string) string) error {
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	if err := fs.Parse(args); err != nil {
		return flagError(fs, err)
	}
	// Variables only for the flags the command line left alone: a
	// repeatable flag given both ways takes the command line's values, not
	// both.
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if v := getenv(envName(f.Name)); v != "" && !given[f.Name] && err == nil {
			if serr := fs.Set(f.Name, v); serr != nil {
				err = fmt.Errorf("invalid value %q for %s: %w", v, envName(f.Name), serr)
			}
		}
	})
	return err
}

func (c *Config) validate() error {
	switch c.Accept {
	case "known", "domain", "any":
	default:
		return fmt.Errorf("--accept must be known, domain or any, not %q", c.Accept)
	}
	for i, d := range c.Domains {
		c.Domains[i] = strings.ToLower(d)
		if _, err := idna.Lookup.ToASCII(c.Domains[i]); err != nil || strings.Trim(c.Domains[i], ".") == "" || strings.Contains(c.Domains[i], "..") {
			return fmt.Errorf("--domain %q is not a domain name (like example.com)", d)
		}
	}
	if c.Accept == "domain" && len(c.Domains) == 0 {
		return fmt.Errorf("--accept domain needs at least one --domain")
	}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		return fmt.Errorf("--tls-cert and --tls-key go together")
	}
	switch {
	case len(c.ACMEDomains) > 0 && (c.TLSCert != "" || c.SMTPTLSSelfSigned):
		return fmt.Errorf("--acme-domain and --tls-cert or --smtp-tls-self-signed: choose one source of certificates")
	case c.SMTPSAddr != "" && c.TLSCert == "" && !c.SMTPTLSSelfSigned && len(c.ACMEDomains) == 0:
		return fmt.Errorf("--smtps-addr needs a certificate: --tls-cert and --tls-key, --acme-domain, or --smtp-tls-self-signed")
	}
	for i, d := range c.ACMEDomains {
		c.ACMEDomains[i] = strings.TrimSuffix(strings.ToLower(d), ".")
		if net.ParseIP(d) != nil || !strings.Contains(c.ACMEDomains[i], ".") {
			return fmt.Errorf("--acme-domain %q: a CA certifies a fully qualified domain name, like mail.example.com", d)
		}
	}
	switch {
	case c.Outbound != "capture" && c.Outbound != "relay" && c.Outbound != "direct":
		return fmt.Errorf("--outbound must be capture, relay or direct, not %q", c.Outbound)
	case c.Outbound == "relay" && c.RelayURL == "":
		return fmt.Errorf("--outbound relay needs --relay-url")
	case c.Outbound != "direct" && (len(c.DKIMKeys) > 0 || c.DirectResolver != ""):
		return fmt.Errorf("--dkim-key and --direct-resolver go with --outbound direct")
	// A file flag without its mode would be neither read nor checked:
	// the operator learns now, not when switching modes.
	case c.Outbound != "relay" && c.RelayCAFile != "":
		return fmt.Errorf("--relay-ca-file goes with --outbound relay")
	case len(c.ACMEDomains) == 0 && c.ACMECAFile != "":
		return fmt.Errorf("--acme-ca-file goes with --acme-domain")
	}
	if c.MaxMessageSize <= 0 {
		return fmt.Errorf("--max-message-size must be positive")
	}
	if p, err := strconv.Atoi(c.DirectPort); err != nil || p < 1 || p > 65535 {
		return fmt.Errorf("--direct-port must be a port number, 1 to 65535, not %q", c.DirectPort)
	}
	// One %s, the relay's id; %% for a percent sign, and no other verb.
	if f := c.RelayMessageIDFormat; strings.Count(f, "%s") != 1 || strings.Contains(strings.NewReplacer("%%", "", "%s", "").Replace(f), "%") {
		return fmt.Errorf("--relay-message-id-format must hold one %%s, where the relay's id goes (like %%s@email.amazonses.com), not %q", f)
	}
	if len(c.ACMEDomains) > 0 {
		if u, err := url.Parse(c.ACMEDirectory); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return fmt.Errorf("--acme-directory must be the CA's directory URL (https://…), not %q", c.ACMEDirectory)
		}
	}
	if c.Retention < 0 || c.MaxMessages < 0 {
		return fmt.Errorf("--retention and --max-messages must be 0 (no bound) or more")
	}
	if c.EventRetention < 0 {
		return fmt.Errorf("--event-retention must be 0 (keep every event) or more")
	}
	if c.SMTPMaxSessionsPerIP < 0 {
		return fmt.Errorf("--smtp-max-sessions-per-ip must be 0 (no limit) or more")
	}
	// A bound that cannot hold would start a server that refuses
	// everything (a negative timeout closes every session before its
	// greeting), so it is refused here, before anything is created.
	for _, b := range []struct {
		flag string
		bad  bool
		want string
	}{
		{"--max-recipients", c.MaxRecipients < 1, "1 or more"},
		{"--max-sessions", c.MaxSessions < 0, "0 (no limit) or more"},
		{"--smtp-command-timeout", c.SMTPCommandTimeout <= 0, "positive"},
		{"--smtp-session-timeout", c.SMTPSessionTimeout <= 0, "positive"},
		{"--api-rate-limit", c.APIRateLimit < 0, "0 (no limit) or more"},
		{"--http-body-timeout", c.HTTPBodyTimeout < 0, "0 (no bound) or more"},
		{"--shutdown-timeout", c.ShutdownTimeout <= 0, "positive"},
	} {
		if b.bad {
			return fmt.Errorf("%s must be %s", b.flag, b.want)
		}
	}
	switch c.LogFormat {
	case "text", "json":
	default:
		return fmt.Errorf("--log-format must be text or json")
	}
	if c.PublicURL != "" {
		if _, err := mcp.ParsePublicURL(c.PublicURL); err != nil {
			return err
		}
	}
	// Listeners open only after the data directory is locked: a typo in
	// an address is refused here, before anything is created.
	for _, l := range []struct{ flag, addr string }{
		{"smtp-addr", c.SMTPAddr}, {"smtps-addr", c.SMTPSAddr}, {"http-addr", c.HTTPAddr},
		{"metrics-addr", c.MetricsAddr}, {"debug-addr", c.DebugAddr}, {"acme-http-addr", c.ACMEHTTPAddr},
	} {
		if l.addr == "" {
			continue
		}
		_, port, err := net.SplitHostPort(l.addr)
		if err == nil {
			_, err = net.LookupPort("tcp", port)
		}
		if err != nil {
			return fmt.Errorf("--%s %q is not a listen address (host:port, port 0 for any free one): %v", l.flag, l.addr, err)
		}
	}
	return nil
}

// printFlags writes the flag table of `inboxd help`.
func printFlags(w io.Writer, fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		def := f.DefValue
		if def == "" {
			def = `""`
		}
		fmt.Fprintf(w, "  --%s (%s, default %s)\n      %s\n", f.Name, envName(f.Name), def, f.Usage)
	})
}

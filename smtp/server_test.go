package smtp

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/emersion/go-sasl"
	gosmtp "github.com/emersion/go-smtp"

	"github.com/inboxd/inboxd/spool"
	"github.com/inboxd/inboxd/store"
)

type env struct {
	db     *store.DB
	boot   store.Bootstrapped
	addr   string
	srv    *Server
	dbPath string
}

// failingStore wraps the real store and fails ingests with an error that
// carries internal detail, as a full disk would.
type failingStore struct {
	*store.DB
	fail bool
}

func (f *failingStore) Ingest(ctx context.Context, in *store.Incoming) ([]store.Delivered, error) {
	if f.fail {
		return nil, fmt.Errorf("insert message: %w", errors.New("database or disk is full (/var/lib/secret.db)"))
	}
	return f.DB.Ingest(ctx, in)
}

func start(t testing.TB, cfg Config, wrap func(*store.DB) Store) *env {
	t.Helper()
	ctx := context.Background()
	dbPath := filepath.Join(t.TempDir(), "inboxd.db")
	db, err := store.Open(ctx, store.Options{Path: dbPath})
	if err != nil {
		t.Fatal(err)
	}
	boot, _, err := db.Bootstrap(ctx)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	writerDone := make(chan struct{})
	go func() { defer close(writerDone); db.Run(runCtx) }()
	if cfg.Hostname == "" {
		cfg.Hostname = "mx.test"
	}
	if cfg.MaxMessageBytes == 0 {
		cfg.MaxMessageBytes = 1 << 20
	}
	if cfg.Accept == "" {
		cfg.Accept = AcceptKnown
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(testWriter{t}, nil))
	}
	var st Store = db
	if wrap != nil {
		st = wrap(db)
	}
	srv := NewServer(cfg, st)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan struct{})
	go func() { defer close(served); srv.Serve(l) }()
	t.Cleanup(func() {
		srv.Shutdown(context.Background())
		<-served
		stop()
		<-writerDone
		db.Close()
	})
	return &env{db: db, boot: boot, addr: l.Addr().String(), srv: srv, dbPath: dbPath}
}

func dial(t *testing.T, addr string) *gosmtp.Client { return dialTB(t, addr) }

func dialTB(t testing.TB, addr string) *gosmtp.Client {
	t.Helper()
	c, err := gosmtp.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.Hello("client.test"); err != nil {
		t.Fatal(err)
	}
	return c
}

// send runs one transaction and returns the error of the step that failed.
func send(c *gosmtp.Client, from string, to []string, body string) error {
	if err := c.Mail(from, nil); err != nil {
		return err
	}
	for _, r := range to {
		if err := c.Rcpt(r, nil); err != nil {
			return err
		}
	}
	w, err := c.Data()
	if err != nil {
		return err
	}
	if _, err := io.WriteString(w, body); err != nil {
		return err
	}
	return w.Close()
}

func smtpCode(t *testing.T, err error) (int, gosmtp.EnhancedCode, string) {
	t.Helper()
	var se *gosmtp.SMTPError
	if !errors.As(err, &se) {
		t.Fatalf("want an SMTP error, got %v", err)
	}
	return se.Code, se.EnhancedCode, se.Message
}

func TestStoresBytesAndEnvelope(t *testing.T) {
	e := start(t, Config{}, nil)
	c := dial(t, e.addr)
	body := "From: Ann <ann@example.com>\r\nTo: inbox@localhost\r\nSubject: hi\r\nMessage-ID: <b1@example.com>\r\n\r\nline one\r\n..dot-stuffed\r\n"
	if err := send(c, "ann@example.com", []string{"INBOX@LocalHost"}, body); err != nil {
		t.Fatal(err)
	}
	msgs, err := e.db.InboxMessages(context.Background(), e.boot.Inbox.ID)
	if err != nil || len(msgs) != 1 {
		t.Fatalf("%d messages, %v", len(msgs), err)
	}
	raw, err := e.db.Raw(context.Background(), msgs[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(raw), "Received: from client.test ([127.0.0.1])\r\n\tby mx.test (inboxd) with ESMTP;\r\n\t") {
		t.Fatalf("trace header: %q", raw)
	}
	// go-smtp's client dot-stuffs on the wire and the server unstuffs: the
	// stored bytes are the message as the client meant it.
	if !strings.HasSuffix(string(raw), "\r\n"+body) {
		t.Fatalf("stored bytes differ:\n%q\nwant suffix\n%q", raw, body)
	}
	env, err := e.db.Envelope(context.Background(), msgs[0].ID)
	if err != nil || env.MailFrom != "ann@example.com" || env.Helo != "client.test" || env.RemoteIP != "127.0.0.1" ||
		len(env.RcptTo) != 1 || env.TLS {
		t.Fatalf("envelope: %+v %v", env, err)
	}
}

func TestReplies(t *testing.T) {
	fs := &failingStore{}
	e := start(t, Config{MaxMessageBytes: 1000}, func(db *store.DB) Store { fs.DB = db; return fs })
	c := dial(t, e.addr)

	// Unknown recipient.
	err := send(c, "a@example.com", []string{"nobody@localhost"}, "x")
	if code, ec, _ := smtpCode(t, err); code != 550 || ec != (gosmtp.EnhancedCode{5, 1, 1}) {
		t.Errorf("unknown recipient: %d %v", code, ec)
	}
	c.Reset()

	// Too large, announced with SIZE.
	err = c.Mail("a@example.com", &gosmtp.MailOptions{Size: 5000})
	if code, ec, _ := smtpCode(t, err); code != 552 || ec != (gosmtp.EnhancedCode{5, 3, 4}) {
		t.Errorf("SIZE too large: %d %v", code, ec)
	}
	c.Reset()

	// Too large, discovered in DATA.
	err = send(c, "a@example.com", []string{"inbox@localhost"}, "Subject: big\r\n\r\n"+strings.Repeat("xxxxxxxxx\r\n", 200))
	if code, ec, _ := smtpCode(t, err); code != 552 || ec != (gosmtp.EnhancedCode{5, 3, 4}) {
		t.Errorf("DATA too large: %d %v", code, ec)
	}
	c.Reset()

	// Exactly the limit is taken by DATA too (a dot-stuffed line counts
	// as its one dot), and one byte more is not.
	exact := "Subject: edge\r\n\r\n.x\r\n"
	exact += strings.Repeat("y", 1000-len(exact)-2) + "\r\n"
	if err := send(c, "a@example.com", []string{"inbox@localhost"}, exact); err != nil {
		t.Errorf("DATA of exactly the limit: %v", err)
	}
	err = send(c, "a@example.com", []string{"inbox@localhost"}, "y"+exact)
	if code, ec, _ := smtpCode(t, err); code != 552 || ec != (gosmtp.EnhancedCode{5, 3, 4}) {
		t.Errorf("DATA one byte over the limit: %d %v", code, ec)
	}
	c.Reset()
	msgs, _ := e.db.InboxMessages(context.Background(), e.boot.Inbox.ID)
	if len(msgs) != 1 {
		t.Fatalf("stored %d messages, want the one of exactly the limit", len(msgs))
	}
	if raw, err := e.db.Raw(context.Background(), msgs[0].ID); err != nil || !strings.HasSuffix(string(raw), exact) {
		t.Fatalf("stored %q (%v)", raw, err)
	}

	// A malformed body is stored, with parse_error.
	bad := "Content-Type: multipart/mixed; boundary=\"b\"\r\nSubject: broken\r\n\r\n--b\r\nContent-Type: text/plain\r\nContent-Transfer-Encoding: base64\r\n\r\n!!!not base64!!!\r\n"
	if err := send(c, "a@example.com", []string{"inbox@localhost"}, bad); err != nil {
		t.Fatalf("malformed body refused: %v", err)
	}
	msgs, _ = e.db.InboxMessages(context.Background(), e.boot.Inbox.ID)
	if len(msgs) != 2 || !slices.ContainsFunc(msgs, func(m store.Message) bool { return m.ParseError != nil }) {
		t.Fatalf("malformed message stored as %+v", msgs)
	}

	// Our failure: 451 4.3.0, and none of the internal text.
	fs.fail = true
	err = send(c, "a@example.com", []string{"inbox@localhost"}, "Subject: x\r\n\r\ny\r\n")
	code, ec, text := smtpCode(t, err)
	if code != 451 || ec != (gosmtp.EnhancedCode{4, 3, 0}) || strings.Contains(text, "disk") || strings.Contains(text, "secret") {
		t.Errorf("local failure: %d %v %q", code, ec, text)
	}
}

func TestPlusTagsAndMultipleRecipients(t *testing.T) {
	e := start(t, Config{}, nil)
	ctx := context.Background()
	other, err := e.db.CreateInbox(ctx, e.boot.ProjectID, store.NewInbox{Address: "sales@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	c := dial(t, e.addr)
	err = send(c, "a@example.com", []string{"inbox+Build42@localhost", "inbox@localhost", "sales@example.com"},
		"Message-ID: <multi@x>\r\nSubject: both\r\n\r\nhello\r\n")
	if err != nil {
		t.Fatal(err)
	}
	mine, _ := e.db.InboxMessages(ctx, e.boot.Inbox.ID)
	theirs, _ := e.db.InboxMessages(ctx, other.ID)
	if len(mine) != 1 || len(theirs) != 1 {
		t.Fatalf("copies: %d in inbox, %d in sales", len(mine), len(theirs))
	}
	// The tag is kept as sent; the inbox match ignores case.
	if tag := mine[0].AddressTag; tag == nil || *tag != "Build42" {
		t.Errorf("address_tag = %s", deref(tag))
	}
}

// Under --accept domain an inbox created by a tagged address keeps the
// tag's case too.
func TestCreatedInboxKeepsTagCase(t *testing.T) {
	e := start(t, Config{Accept: AcceptDomain, Domains: []string{"agents.test"}}, nil)
	if err := send(dial(t, e.addr), "a@example.com", []string{"New+Run7@Agents.Test"}, "Subject: hi\r\n\r\nx\r\n"); err != nil {
		t.Fatal(err)
	}
	ib, err := e.db.InboxByAddress(context.Background(), "new@agents.test")
	if err != nil {
		t.Fatal(err)
	}
	msgs, _ := e.db.InboxMessages(context.Background(), ib.ID)
	if len(msgs) != 1 {
		t.Fatalf("%d messages", len(msgs))
	}
	if tag := deref(msgs[0].AddressTag); tag != "Run7" {
		t.Errorf("address_tag = %s", tag)
	}
}

// An inbox named plainly and with a +tag in one transaction stores one
// copy, which keeps the tag whatever the order.
func TestSameInboxTaggedAndPlainKeepsTheTag(t *testing.T) {
	e := start(t, Config{}, nil)
	for i, rcpts := range [][]string{{"inbox@localhost", "inbox+t2@localhost"}, {"inbox+t3@localhost", "inbox@localhost"}} {
		if err := send(dial(t, e.addr), "a@example.com", rcpts, fmt.Sprintf("Message-ID: <tag%d@x>\r\nSubject: hi\r\n\r\nx\r\n", i)); err != nil {
			t.Fatal(err)
		}
	}
	msgs, _ := e.db.InboxMessages(context.Background(), e.boot.Inbox.ID)
	var tags []string
	for _, m := range msgs {
		tags = append(tags, deref(m.AddressTag))
	}
	slices.Sort(tags)
	if !slices.Equal(tags, []string{"t2", "t3"}) {
		t.Errorf("address tags %q, want one copy each with t2 and t3", tags)
	}
}

// An inbox deleted between RCPT and DATA is an unknown mailbox (550
// 5.1.1), not our failure; the other recipients of the transaction still
// get their copy.
func TestInboxDeletedBeforeData(t *testing.T) {
	e := start(t, Config{}, nil)
	ctx := context.Background()
	sales, err := e.db.CreateInbox(ctx, e.boot.ProjectID, store.NewInbox{Address: "sales@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	c := dial(t, e.addr)
	// deletedBeforeData sends to rcpts, deleting sales between RCPT and DATA.
	deletedBeforeData := func(subject string, rcpts ...string) error {
		t.Helper()
		if err := c.Mail("a@example.com", nil); err != nil {
			t.Fatal(err)
		}
		for _, r := range rcpts {
			if err := c.Rcpt(r, nil); err != nil {
				t.Fatal(err)
			}
		}
		if err := e.db.DeleteInbox(ctx, e.boot.ProjectID, sales.ID); err != nil {
			t.Fatal(err)
		}
		w, err := c.Data()
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(w, "Subject: "+subject+"\r\n\r\nx\r\n")
		return w.Close()
	}
	if code, ec, _ := smtpCode(t, deletedBeforeData("gone", "sales@example.com")); code != 550 || ec != (gosmtp.EnhancedCode{5, 1, 1}) {
		t.Errorf("only recipient deleted: %d %v", code, ec)
	}
	if sales, err = e.db.CreateInbox(ctx, e.boot.ProjectID, store.NewInbox{Address: "sales@example.com"}); err != nil {
		t.Fatal(err)
	}
	if err := deletedBeforeData("half", "sales@example.com", "inbox@localhost"); err != nil {
		t.Fatalf("one of two recipients deleted: %v", err)
	}
	msgs, _ := e.db.InboxMessages(ctx, e.boot.Inbox.ID)
	if len(msgs) != 1 || msgs[0].Subject != "half" {
		t.Fatalf("the remaining recipient got %+v", msgs)
	}
}

func TestAcceptPolicies(t *testing.T) {
	e := start(t, Config{Accept: AcceptDomain, Domains: []string{"agents.test"}}, nil)
	c := dial(t, e.addr)
	if err := send(c, "a@example.com", []string{"new+x@agents.test"}, "Subject: hi\r\n\r\nx\r\n"); err != nil {
		t.Fatal(err)
	}
	ib, err := e.db.InboxByAddress(context.Background(), "new@agents.test")
	if err != nil {
		t.Fatalf("inbox not created: %v", err)
	}
	msgs, _ := e.db.InboxMessages(context.Background(), ib.ID)
	if len(msgs) != 1 {
		t.Fatalf("%d messages", len(msgs))
	}
	c.Reset()
	// Never an open relay: other domains are refused.
	err = send(c, "a@example.com", []string{"victim@gmail.com"}, "x")
	if code, _, _ := smtpCode(t, err); code != 550 {
		t.Errorf("relay attempt: %d", code)
	}
}

// The accept policies that create inboxes create only what POST /inboxes
// would: an address no inbox can have is an unknown recipient.
func TestAcceptAnyCreatesOnlyValidInboxes(t *testing.T) {
	e := start(t, Config{Accept: AcceptAny}, nil)
	ctx := context.Background()
	before, err := e.db.ListInboxes(ctx, e.boot.ProjectID)
	if err != nil {
		t.Fatal(err)
	}
	c := dial(t, e.addr)
	if err := c.Mail("a@example.com", nil); err != nil {
		t.Fatal(err)
	}
	for _, rcpt := range []string{`"a b"@example.net`, `"evil@gmail.com"@localhost`, "+only@example.net", "a@b..c"} {
		err := c.Rcpt(rcpt, nil)
		if code, enh, _ := smtpCode(t, err); code != 550 || enh != (gosmtp.EnhancedCode{5, 1, 1}) {
			t.Errorf("RCPT %s: %v, want 550 5.1.1", rcpt, err)
		}
	}
	if err := c.Rcpt("new@example.net", nil); err != nil {
		t.Fatalf("a valid address: %v", err)
	}
	c.Reset()
	if err := send(c, "a@example.com", []string{"new@example.net"}, "Subject: hi\r\n\r\nx\r\n"); err != nil {
		t.Fatal(err)
	}
	after, err := e.db.ListInboxes(ctx, e.boot.ProjectID)
	if err != nil || len(after) != len(before)+1 {
		t.Errorf("inboxes %d, then %d (%v): want only new@example.net created", len(before), len(after), err)
	}
}

func TestAuthOnlyOverTLS(t *testing.T) {
	tlsCfg, err := SelfSignedTLS("mx.test")
	if err != nil {
		t.Fatal(err)
	}
	e := start(t, Config{TLS: tlsCfg}, nil)
	if ok, _ := dial(t, e.addr).Extension("AUTH"); ok {
		t.Fatal("AUTH offered before STARTTLS")
	}
	c, err := gosmtp.DialStartTLS(e.addr, &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if ok, mechs := c.Extension("AUTH"); !ok || !strings.Contains(mechs, "PLAIN") || !strings.Contains(mechs, "LOGIN") {
		t.Fatalf("AUTH after STARTTLS: %v %q", ok, mechs)
	}
	if err := c.Auth(sasl.NewPlainClient("", "me", "wrong")); err == nil {
		t.Fatal("wrong key accepted")
	}
	if err := c.Auth(sasl.NewPlainClient("", "me", e.boot.AdminToken)); err != nil {
		t.Fatal(err)
	}
	if err := send(c, "a@example.com", []string{"inbox@localhost"}, "Subject: tls\r\n\r\nx\r\n"); err != nil {
		t.Fatal(err)
	}
	msgs, _ := e.db.InboxMessages(context.Background(), e.boot.Inbox.ID)
	env, err := e.db.Envelope(context.Background(), msgs[0].ID)
	if err != nil || !env.TLS || env.AuthUser != e.boot.AdminKey.ID {
		t.Fatalf("envelope: %+v %v", env, err)
	}
	raw, _ := e.db.Raw(context.Background(), msgs[0].ID)
	if !strings.Contains(string(raw), "with ESMTPSA;") {
		t.Errorf("trace header: %q", raw[:120])
	}
}

func TestLoginMechanism(t *testing.T) {
	e := start(t, Config{AuthInsecure: true}, nil)
	c := dial(t, e.addr)
	if err := c.Auth(sasl.NewLoginClient("me", e.boot.AdminToken)); err != nil {
		t.Fatal(err)
	}
}

// RCPT outcomes (SPEC §2): an address at a domain the gateway serves
// (an existing inbox's, a --domain) that is not an inbox is 550 5.1.1;
// any other address needs a sending grant: 550 5.7.1 without one.
func TestRecipientReplies(t *testing.T) {
	tests := []struct {
		name  string
		cfg   Config
		creds string // AUTH PLAIN password; "" = none
		rcpt  string
		code  int
		ec    gosmtp.EnhancedCode
	}{
		{"external", Config{}, "", "victim@gmail.com", 550, gosmtp.EnhancedCode{5, 7, 1}},
		{"unknown at an inbox's domain", Config{}, "", "nobody@localhost", 550, gosmtp.EnhancedCode{5, 1, 1}},
		{"inbox domain case", Config{}, "", "nobody@LocalHost", 550, gosmtp.EnhancedCode{5, 1, 1}},
		{"inbox domain with its root dot", Config{}, "", "nobody@localhost.", 550, gosmtp.EnhancedCode{5, 1, 1}},
		{"unknown at --domain", Config{Domains: []string{"agents.test"}}, "", "nobody@agents.test", 550, gosmtp.EnhancedCode{5, 1, 1}},
		{"accept-any credentials, external", Config{AuthAcceptAny: true}, "anything", "victim@gmail.com", 550, gosmtp.EnhancedCode{5, 7, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.cfg.AuthInsecure = true
			e := start(t, tt.cfg, nil)
			c := dial(t, e.addr)
			if tt.creds != "" {
				if err := c.Auth(sasl.NewPlainClient("", "app", tt.creds)); err != nil {
					t.Fatal(err)
				}
			}
			if err := c.Mail("a@example.com", nil); err != nil {
				t.Fatal(err)
			}
			code, ec, _ := smtpCode(t, c.Rcpt(tt.rcpt, nil))
			if code != tt.code || ec != tt.ec {
				t.Errorf("RCPT %s: %d %v, want %d %v", tt.rcpt, code, ec, tt.code, tt.ec)
			}
		})
	}
}

// A recipient domain written with its root dot is the same domain: the
// mail is stored in the inbox.
func TestRecipientDomainWithRootDot(t *testing.T) {
	e := start(t, Config{}, nil)
	c := dial(t, e.addr)
	if err := send(c, "a@example.com", []string{"inbox@localhost."}, "Subject: dot\r\n\r\nx\r\n"); err != nil {
		t.Fatalf("inbox@localhost.: %v", err)
	}
	if msgs, err := e.db.InboxMessages(context.Background(), e.boot.Inbox.ID); err != nil || len(msgs) != 1 {
		t.Fatalf("stored %d messages, %v", len(msgs), err)
	}
}

// With --smtp-auth-accept-any a real API key still authenticates as
// itself (the envelope names the key), and anything else is accepted as
// nobody in particular.
func TestAuthAcceptAnyKeepsRealKeys(t *testing.T) {
	e := start(t, Config{AuthInsecure: true, AuthAcceptAny: true}, nil)
	for _, tc := range []struct{ pass, want string }{{e.boot.AdminToken, e.boot.AdminKey.ID}, {"anything", "app"}} {
		c := dial(t, e.addr)
		if err := c.Auth(sasl.NewPlainClient("", "app", tc.pass)); err != nil {
			t.Fatal(err)
		}
		if err := send(c, "a@example.com", []string{"inbox@localhost"}, "Subject: "+tc.want+"\r\n\r\nx\r\n"); err != nil {
			t.Fatal(err)
		}
	}
	msgs, _ := e.db.InboxMessages(context.Background(), e.boot.Inbox.ID)
	if len(msgs) != 2 {
		t.Fatalf("%d messages", len(msgs))
	}
	for _, m := range msgs {
		env, err := e.db.Envelope(context.Background(), m.ID)
		if err != nil || env.AuthUser != m.Subject {
			t.Errorf("%q: auth_user %q %v", m.Subject, env.AuthUser, err)
		}
	}
}

// A key revoked while its session is open stops at the session's next
// MAIL, and at DATA when revoked mid-transaction (SPEC §2: the grant is
// checked again at every transaction): 535 5.7.8, nothing stored.
func TestRevokedKeyStopsAtNextTransaction(t *testing.T) {
	e := start(t, Config{AuthInsecure: true}, nil)
	ctx := context.Background()
	revocable := func() (string, func()) {
		k, token, err := e.db.CreateKey(ctx, e.boot.ProjectID, "app", []string{"messages:send"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return token, func() {
			if err := e.db.RevokeKey(ctx, e.boot.ProjectID, k.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
	revoked := gosmtp.EnhancedCode{5, 7, 8}

	token, revoke := revocable()
	c := dial(t, e.addr)
	if err := c.Auth(sasl.NewPlainClient("", "app", token)); err != nil {
		t.Fatal(err)
	}
	if err := send(c, "a@example.com", []string{"inbox@localhost"}, "Subject: before\r\n\r\nx\r\n"); err != nil {
		t.Fatal(err)
	}
	revoke()
	if code, ec, _ := smtpCode(t, c.Mail("a@example.com", nil)); code != 535 || ec != revoked {
		t.Errorf("MAIL after revocation: %d %v", code, ec)
	}

	token, revoke = revocable()
	c = dial(t, e.addr)
	if err := c.Auth(sasl.NewPlainClient("", "app", token)); err != nil {
		t.Fatal(err)
	}
	if err := c.Mail("a@example.com", nil); err != nil {
		t.Fatal(err)
	}
	if err := c.Rcpt("inbox@localhost", nil); err != nil {
		t.Fatal(err)
	}
	revoke()
	w, err := c.Data()
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(w, "Subject: after\r\n\r\nx\r\n")
	if code, ec, _ := smtpCode(t, w.Close()); code != 535 || ec != revoked {
		t.Errorf("DATA after revocation: %d %v", code, ec)
	}
	msgs, _ := e.db.InboxMessages(ctx, e.boot.Inbox.ID)
	if len(msgs) != 1 || msgs[0].Subject != "before" {
		t.Fatalf("stored %+v", msgs)
	}
}

func TestAuthAcceptAnyGrantsNothing(t *testing.T) {
	e := start(t, Config{AuthInsecure: true, AuthAcceptAny: true}, nil)
	c := dial(t, e.addr)
	if err := c.Auth(sasl.NewPlainClient("", "app", "anything")); err != nil {
		t.Fatal(err)
	}
	err := send(c, "a@example.com", []string{"someone@example.org"}, "x")
	if code, _, _ := smtpCode(t, err); code != 550 {
		t.Errorf("authenticated-by-anything session relayed: %d", code)
	}
}

func TestSessionLimit(t *testing.T) {
	e := start(t, Config{MaxSessions: 2}, nil)
	dial(t, e.addr)
	dial(t, e.addr)
	if got := refusal(t, e.addr); !strings.HasPrefix(got, "421 4.7.0") {
		t.Fatalf("third session got %q", got)
	}
}

// Eight clients replying into one thread at once get sequences 1..N with no
// gap and no duplicate.
func TestConcurrentSequences(t *testing.T) {
	e := start(t, Config{}, nil)
	c := dial(t, e.addr)
	if err := send(c, "a@example.com", []string{"inbox@localhost"}, "Message-ID: <root@x>\r\nSubject: root\r\n\r\nx\r\n"); err != nil {
		t.Fatal(err)
	}
	const clients, each = 8, 25
	var wg sync.WaitGroup
	errs := make(chan error, clients*each)
	for i := range clients {
		wg.Go(func() {
			c, err := gosmtp.Dial(e.addr)
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			for j := range each {
				body := fmt.Sprintf("Message-ID: <r%d.%d@x>\r\nIn-Reply-To: <root@x>\r\nSubject: re\r\n\r\n%d\r\n", i, j, j)
				if err := send(c, "a@example.com", []string{"inbox@localhost"}, body); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	msgs, _ := e.db.InboxMessages(context.Background(), e.boot.Inbox.ID)
	thread, err := e.db.ThreadMessages(context.Background(), msgs[0].ThreadID)
	if err != nil || len(thread) != 1+clients*each {
		t.Fatalf("thread holds %d (%v)", len(thread), err)
	}
	for i, m := range thread {
		if m.Sequence != int64(i+1) {
			t.Fatalf("position %d has sequence %d", i, m.Sequence)
		}
	}
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

// testWriter sends server logs to the test log.
type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// A message an API-key holder submits loses its Bcc: fields before any
// copy is stored (SPEC §2), also when every recipient is a local inbox and
// the message is received through the ingest path, in memory or spooled.
func TestAuthenticatedLocalMailDropsBcc(t *testing.T) {
	sp, err := spool.New(t.TempDir(), 1<<10)
	if err != nil {
		t.Fatal(err)
	}
	e := start(t, Config{AuthInsecure: true, Spool: sp}, nil)
	ctx := context.Background()
	for _, size := range []int{10, 64 << 10} { // below and above the spool's memory limit
		body := fmt.Sprintf("Message-ID: <bcc%d@x>\r\nTo: inbox@localhost\r\nBcc: hidden@example.com,\r\n\tother@example.com\r\nSubject: s\r\n\r\n%s\r\n",
			size, strings.Repeat("b", size))
		c := dial(t, e.addr)
		if err := c.Auth(sasl.NewPlainClient("", "app", e.boot.AdminToken)); err != nil {
			t.Fatal(err)
		}
		if err := send(c, "a@example.com", []string{"inbox@localhost"}, body); err != nil {
			t.Fatal(err)
		}
		m := storedByRFCID(t, e, fmt.Sprintf("<bcc%d@x>", size))
		raw, err := e.db.Raw(ctx, m.ID)
		if err != nil {
			t.Fatal(err)
		}
		want := strings.Replace(body, "Bcc: hidden@example.com,\r\n\tother@example.com\r\n", "", 1)
		if _, stored, _ := strings.Cut(string(raw), "\r\n\tby mx.test (inboxd)"); !strings.HasSuffix(stored, want) {
			t.Errorf("%d-byte body: stored %q…, want it to end with the message without Bcc", size, raw[:min(len(raw), 300)])
		}
	}
	// Without AUTH it is received mail, stored byte for byte.
	body := "Message-ID: <plain@x>\r\nBcc: kept@example.com\r\nSubject: s\r\n\r\nx\r\n"
	if err := send(dial(t, e.addr), "a@example.com", []string{"inbox@localhost"}, body); err != nil {
		t.Fatal(err)
	}
	m := storedByRFCID(t, e, "<plain@x>")
	if raw, _ := e.db.Raw(ctx, m.ID); !strings.HasSuffix(string(raw), body) {
		t.Errorf("unauthenticated mail changed: %q", raw)
	}
}

func storedByRFCID(t *testing.T, e *env, id string) store.Message {
	t.Helper()
	msgs, err := e.db.InboxMessages(context.Background(), e.boot.Inbox.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		if m.RFCMessageID == id {
			return m
		}
	}
	t.Fatalf("no message %s among %d", id, len(msgs))
	return store.Message{}
}

// recordingSubmitter records what the send path was handed.
// It answers err.
type recordingSubmitter struct {
	rcpts [][]string
	err   error
}

func (r *recordingSubmitter) Submit(_ context.Context, _ store.Key, rcpts []string, _ []byte) error {
	r.rcpts = append(r.rcpts, rcpts)
	return r.err
}

// A submission the send path refuses for its From is the client's fault,
// answered 550 5.7.1 (and the session goes on); any other failure of the
// send path is ours, 451.
func TestSubmissionRefusals(t *testing.T) {
	for _, c := range []struct {
		err  error
		code int
		enh  gosmtp.EnhancedCode
	}{
		{fmt.Errorf("wrapped: %w", ErrSenderNotAllowed), 550, gosmtp.EnhancedCode{5, 7, 1}},
		{errors.New("disk on fire"), 451, gosmtp.EnhancedCode{4, 3, 0}},
	} {
		sub := &recordingSubmitter{err: c.err}
		e := start(t, Config{AuthInsecure: true, Submitter: sub}, nil)
		cl := dial(t, e.addr)
		if err := cl.Auth(sasl.NewPlainClient("", "app", e.boot.AdminToken)); err != nil {
			t.Fatal(err)
		}
		err := send(cl, "inbox@localhost", []string{"someone@example.org"}, "From: ceo@example.org\r\nSubject: x\r\n\r\nx\r\n")
		var se *gosmtp.SMTPError
		if !errors.As(err, &se) || se.Code != c.code || se.EnhancedCode != c.enh || len(sub.rcpts) != 1 {
			t.Errorf("%v: %v (submitted %v)", c.err, err, sub.rcpts)
		}
		if err := cl.Noop(); err != nil {
			t.Errorf("%v: the session ended: %v", c.err, err)
		}
	}
}

// An address the accept policy makes an inbox for is local for a key
// holder too: the inbox is created and receives the mail, which does not
// go to the send path (where it would be captured or sent out).
func TestAuthenticatedMailCreatesInbox(t *testing.T) {
	sub := &recordingSubmitter{}
	e := start(t, Config{AuthInsecure: true, Accept: AcceptDomain, Domains: []string{"example.org"}, Submitter: sub}, nil)
	c := dial(t, e.addr)
	if err := c.Auth(sasl.NewPlainClient("", "app", e.boot.AdminToken)); err != nil {
		t.Fatal(err)
	}
	if err := send(c, "inbox@localhost", []string{"new@example.org"}, "From: inbox@localhost\r\nSubject: x\r\n\r\nx\r\n"); err != nil {
		t.Fatal(err)
	}
	ib, err := e.db.InboxByAddress(context.Background(), "new@example.org")
	if err != nil || len(sub.rcpts) != 0 {
		t.Fatalf("inbox %v, submitted %v", err, sub.rcpts)
	}
	if msgs, _ := e.db.InboxMessages(context.Background(), ib.ID); len(msgs) != 1 {
		t.Errorf("new inbox holds %d messages", len(msgs))
	}
}

// The same, for an inbox the mail itself creates (--accept any): the two
// names of the new inbox are one inbox, and its one copy keeps the tag.
func TestNewInboxTaggedAndPlainKeepsTheTag(t *testing.T) {
	e := start(t, Config{Accept: AcceptAny}, nil)
	ctx := context.Background()
	for i, rcpts := range [][]string{{"new9@example.net", "new9+tag@example.net"}, {"new10+tag@example.net", "New10@example.net"}} {
		if err := send(dial(t, e.addr), "a@example.com", rcpts, fmt.Sprintf("Message-ID: <newtag%d@x>\r\nSubject: hi\r\n\r\nx\r\n", i)); err != nil {
			t.Fatal(err)
		}
		ib, err := e.db.InboxByAddress(ctx, fmt.Sprintf("new%d@example.net", 9+i))
		if err != nil {
			t.Fatal(err)
		}
		msgs, _ := e.db.InboxMessages(ctx, ib.ID)
		if len(msgs) != 1 || deref(msgs[0].AddressTag) != "tag" {
			var tags []string
			for _, m := range msgs {
				tags = append(tags, deref(m.AddressTag))
			}
			t.Errorf("%v: %d copies with tags %q, want one with tag", rcpts, len(msgs), tags)
		}
	}
}

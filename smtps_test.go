package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inboxd/inboxd/corpus"
)

// --smtps-addr serves SMTP over implicit TLS for the clients that insist
// on it: Python's smtplib.SMTP_SSL and nodemailer with secure: true
// deliver there, and the stored envelope says TLS. The plain listener
// still offers STARTTLS; the implicit one does not (it is TLS already).
func TestImplicitTLSClients(t *testing.T) {
	data := t.TempDir()
	s := startServer(t, data, "--smtp-tls-self-signed", "--smtps-addr", "127.0.0.1:0")
	host, port, _ := strings.Cut(s.srv.SMTPSAddr(), ":")
	db := openStore(t, data)

	pyBody := "From: py@example.com\r\nTo: inbox@localhost\r\nSubject: over SMTP_SSL\r\nMessage-ID: <py-smtps@example.com>\r\n\r\nsent by smtplib\r\n"
	script := fmt.Sprintf(`
import smtplib, ssl, sys
ctx = ssl.create_default_context(); ctx.check_hostname = False; ctx.verify_mode = ssl.CERT_NONE
s = smtplib.SMTP_SSL(%q, %s, context=ctx)
s.ehlo()
assert not s.has_extn("starttls"), "STARTTLS offered inside TLS"
s.sendmail("py@example.com", ["inbox@localhost"], sys.stdin.buffer.read())
s.quit()
`, host, port)
	cmd := exec.Command("python3", "-c", script)
	cmd.Stdin = strings.NewReader(pyBody)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("python smtplib.SMTP_SSL: %v\n%s", err, out)
	}
	assertStored(t, db, "inbox@localhost", pyBody, true)

	node, err := exec.LookPath("node")
	if err != nil {
		corpus.SkipOrFail(t, "node not installed")
	}
	dir := filepath.Join("smtp", "testdata", "nodemailer")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "nodemailer")); err != nil {
		corpus.SkipOrFail(t, "run: npm ci --prefix "+dir)
	}
	out, err := exec.Command(node, filepath.Join(dir, "send.mjs"), host, port).CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "250 ") {
		t.Fatalf("nodemailer secure: true: %v\n%s", err, out)
	}
	ib, err := db.InboxByAddress(context.Background(), "inbox@localhost")
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := db.InboxMessages(context.Background(), ib.ID)
	if err != nil || len(msgs) != 2 || msgs[0].Subject != "over implicit TLS" {
		t.Fatalf("after nodemailer: %+v %v", msgs, err)
	}
	if env, err := db.Envelope(context.Background(), msgs[0].ID); err != nil || !env.TLS {
		t.Errorf("nodemailer's envelope %+v %v", env, err)
	}
}

// --smtps-addr without a certificate is refused before anything starts.
func TestImplicitTLSNeedsACertificate(t *testing.T) {
	_, _, err := serveConfig([]string{"--smtps-addr", "127.0.0.1:0"}, func(string) string { return "" }, os.Stderr)
	if err == nil || !strings.Contains(err.Error(), "--smtps-addr needs a certificate") {
		t.Fatalf("serveConfig: %v", err)
	}
}

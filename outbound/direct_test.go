package outbound

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-msgauth/dkim"
	gosmtp "github.com/emersion/go-smtp"
	"github.com/inboxd/inboxd/app"
	"github.com/inboxd/inboxd/internal/dnstest"
	"github.com/inboxd/inboxd/smtp"
	"github.com/inboxd/inboxd/store"
)

// --outbound direct: each recipient domain's MX, found in DNS (a real
// DNS server on loopback), takes its recipients' copy over STARTTLS, with
// our EHLO name and a DKIM signature that verifies against the published
// key; a domain with no MX takes it at its own address; a domain that does
// not exist or has a null MX bounces; one whose MX does not answer defers.
func TestDirectDelivery(t *testing.T) {
	mx := startRelay(t)
	mx.open = true
	mx.rcptCode["nobody@bounce.test"] = &gosmtp.SMTPError{Code: 550, EnhancedCode: gosmtp.EnhancedCode{5, 1, 1}, Message: "no such user"}
	host, port, _ := net.SplitHostPort(mx.addr)
	ip := net.ParseIP(host)
	_, resolver := dnstest.Serve(t, dnstest.Zone{
		MX: map[string][]string{"example.test": {"mx-down.example.test", "mx1.example.test"}, "bounce.test": {"mx1.example.test"},
			"nullmx.test": {"."}, "down.test": {"mx-down.example.test"}},
		A: map[string]net.IP{"mx1.example.test": ip, "nomx.test": ip, "mx-down.example.test": net.ParseIP("127.0.0.2")},
	})
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	direct := smtp.NewDirect(smtp.DirectConfig{Hostname: "mx.inboxd.test", Port: port, Resolver: resolver, Timeout: 5 * time.Second,
		DKIM: map[string]smtp.DKIMKey{"localhost": {Selector: "sel1", Signer: key}}})
	e := newEnv(t, app.OutboundDirect, direct, "")

	res := e.send(t, app.SendInput{To: []app.AddressInput{{Email: "alice@example.test"}, {Email: "carol@NoMX.test"}}, Subject: subject("direct"), Text: "hello"})
	e.waitState(t, e.boot.Inbox.ID, res.MessageID, store.StatusSent)
	if len(mx.got) != 2 {
		t.Fatalf("the exchanger got %d transactions, want one per domain: %+v", len(mx.got), mx.got)
	}
	for _, g := range mx.got {
		if !g.tls || g.helo != "mx.inboxd.test" || g.from != "inbox@localhost" || len(g.rcpts) != 1 {
			t.Errorf("transaction %+v", g)
		}
		vs, err := dkim.VerifyWithOptions(bytes.NewReader(g.raw), &dkim.VerifyOptions{LookupTXT: func(name string) ([]string, error) {
			if name != "sel1._domainkey.localhost" {
				t.Errorf("DKIM key looked up at %s", name)
			}
			return []string{"v=DKIM1; k=ed25519; p=" + base64.StdEncoding.EncodeToString(pub)}, nil
		}})
		if err != nil || len(vs) != 1 || vs[0].Err != nil || vs[0].Domain != "localhost" {
			t.Errorf("DKIM: %v %+v", err, vs)
		}
	}
	dels, _ := e.db.DeliveriesOf(context.Background(), []string{res.MessageID})
	for _, d := range dels[res.MessageID] {
		if d.Status != store.StatusSent {
			t.Errorf("delivery to %s: %s", d.Email, d.Status)
		}
	}

	for _, c := range []struct {
		rcpt, state string
		code        int // 0: none (no server answered)
		text        string
	}{
		{"nobody@bounce.test", store.StatusBounced, 550, "5.1.1 no such user"},
		{"erin@nullmx.test", store.StatusBounced, 556, "5.1.10 nullmx.test accepts no mail (null MX)"},
		{"frank@nowhere.test", store.StatusBounced, 550, "5.1.2 nowhere.test has no mail exchanger and no address"},
		{"gina@down.test", store.StatusDeferred, 0, "no mail exchanger of down.test answered"},
	} {
		res := e.send(t, app.SendInput{To: []app.AddressInput{{Email: c.rcpt}}, Subject: subject(c.rcpt), Text: "hello"})
		e.waitState(t, e.boot.Inbox.ID, res.MessageID, c.state)
		dels, _ := e.db.DeliveriesOf(context.Background(), []string{res.MessageID})
		d := dels[res.MessageID][0]
		code, text := 0, ""
		if d.Code != nil {
			code = *d.Code
		}
		if d.Message != nil {
			text = *d.Message
		}
		if d.Status != c.state || code != c.code || !strings.HasPrefix(text, c.text) {
			t.Errorf("%s: %s %d %q, want %s %d %q", c.rcpt, d.Status, code, text, c.state, c.code, c.text)
		}
	}
}

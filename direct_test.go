package main

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inboxd/inboxd/internal/dnstest"
)

// --outbound direct from the command line: the flags' resolver, port and
// DKIM key (an RSA PKCS #1 file) reach the transport. The sender's MX
// lookup (a DNS server on loopback) names a second inboxd as example.test's
// exchanger, which takes the mail under --accept any; the copy it stores
// carries our DKIM signature.
func TestDirectOutboundFromTheCommandLine(t *testing.T) {
	recvData := t.TempDir()
	recv := startServer(t, recvData, "--accept", "any", "--smtp-tls-self-signed")
	rc, rproject, _ := adminAPI(t, recvData, recv.http)
	_, port, _ := net.SplitHostPort(recv.smtp)
	dnsAddr, _ := dnstest.Serve(t, dnstest.Zone{MX: map[string][]string{"example.test": {"mx.example.test"}},
		A: map[string]net.IP{"mx.example.test": net.ParseIP("127.0.0.1")}})

	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(t.TempDir(), "dkim.pem")
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), 0o600); err != nil {
		t.Fatal(err)
	}
	sendData := t.TempDir()
	send := startServer(t, sendData, "--outbound", "direct", "--direct-port", port, "--direct-resolver", dnsAddr,
		"--dkim-key", "localhost:sel1:"+keyFile, "--hostname", "out.inboxd.test")
	sc, sproject, sinbox := adminAPI(t, sendData, send.http)

	ctx := context.Background()
	var ev struct {
		NextCursor string `json:"next_cursor"`
	}
	if err := rc.do(ctx, "GET", "/v1/projects/"+rproject+"/events", nil, "", &ev); err != nil {
		t.Fatal(err)
	}
	var sent struct {
		MessageID string `json:"message_id"`
	}
	if err := sc.do(ctx, "POST", "/v1/projects/"+sproject+"/inboxes/"+sinbox+"/messages",
		map[string]any{"to": []string{"alice@example.test"}, "subject": "direct", "text": "hello over port 25"}, "", &sent); err != nil {
		t.Fatal(err)
	}
	// The receiver's event log, long-polled: its first new message.
	var got struct {
		Data []struct {
			Type string
			Data struct {
				InboxID   string `json:"inbox_id"`
				MessageID string `json:"message_id"`
			}
		}
	}
	if err := rc.do(ctx, "GET", "/v1/projects/"+rproject+"/events?wait=30&after="+ev.NextCursor, nil, "", &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Data) == 0 || got.Data[0].Type != "message.received" {
		t.Fatalf("the exchanger received nothing: %+v", got)
	}
	d := got.Data[0].Data
	req, _ := http.NewRequest("GET", rc.base+"/v1/projects/"+rproject+"/inboxes/"+d.InboxID+"/messages/"+d.MessageID+"/raw", nil)
	req.Header.Set("Authorization", "Bearer "+rc.key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	head, _, _ := strings.Cut(string(raw), "\r\n\r\n")
	if !strings.Contains(head, "DKIM-Signature: ") || !strings.Contains(head, "d=localhost") || !strings.Contains(head, "s=sel1") ||
		!strings.Contains(head, "out.inboxd.test") || !strings.Contains(string(raw), "hello over port 25") {
		t.Errorf("the exchanger stored:\n%s", raw)
	}
}

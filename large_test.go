package main

import (
	"bytes"
	"encoding/base64"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
)

// A message over the spool's memory limit (1 MiB) goes through the whole
// server: received into <data>/spool, stored in chunks, and served back
// byte for byte by the raw route and the attachment download. (That the
// spool is released is store's TestIngestReleasesSpooledMessages: its files
// are unlinked when created, so the directory cannot show a leak.)
func TestLargeMessageThroughTheAPI(t *testing.T) {
	data := t.TempDir()
	s := startServer(t, data)
	c, project, inbox := adminAPI(t, data, s.http)
	api := &overloadAPI{base: "http://" + s.http, token: c.key, client: http.DefaultClient}
	get := func(path string) []byte {
		t.Helper()
		code, b, _, err := api.get(path)
		if err != nil || code != http.StatusOK {
			t.Fatalf("GET %s: %d %v %.200s", path, code, err, b)
		}
		return b
	}

	att := make([]byte, 3<<20+777)
	rand.NewChaCha8([32]byte{3}).Read(att)
	enc := base64.StdEncoding.EncodeToString(att)
	var b strings.Builder
	b.WriteString("From: Ann <ann@example.com>\r\nMessage-ID: <big@example.com>\r\nSubject: the drawings\r\n")
	b.WriteString("MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=B\r\n\r\n--B\r\nContent-Type: text/plain\r\n\r\nDrawings attached.\r\n")
	b.WriteString("--B\r\nContent-Type: application/pdf\r\nContent-Disposition: attachment; filename=drawings.pdf\r\nContent-Transfer-Encoding: base64\r\n\r\n")
	for len(enc) > 76 {
		b.WriteString(enc[:76] + "\r\n")
		enc = enc[76:]
	}
	b.WriteString(enc + "\r\n--B--\r\n")
	body := b.String()
	if err := sendMail(s.smtp, "ann@example.com", []string{"inbox@localhost"}, body); err != nil {
		t.Fatal(err)
	}

	base := "/v1/projects/" + project + "/inboxes/" + inbox
	var feed struct {
		Data []struct {
			ID, Subject string
			Attachments []struct {
				ID, Filename string
				Bytes        int
			}
		}
	}
	api.getJSON(t, base+"/messages", &feed)
	if len(feed.Data) != 1 || feed.Data[0].Subject != "the drawings" || len(feed.Data[0].Attachments) != 1 {
		t.Fatalf("feed: %+v", feed)
	}
	m := feed.Data[0]
	if a := m.Attachments[0]; a.Filename != "drawings.pdf" || a.Bytes != len(att) {
		t.Fatalf("attachment: %+v", a)
	}
	raw := get(base + "/messages/" + m.ID + "/raw")
	if !bytes.HasPrefix(raw, []byte("Received: ")) || !bytes.HasSuffix(raw, []byte("\r\n"+body)) {
		t.Fatalf("raw route: %d bytes, not trace + the %d bytes sent", len(raw), len(body))
	}
	if got := get(base + "/messages/" + m.ID + "/attachments/" + m.Attachments[0].ID); !bytes.Equal(got, att) {
		t.Fatalf("attachment download: %d bytes, differs from the %d sent", len(got), len(att))
	}
}

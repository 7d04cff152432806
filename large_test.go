package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A message over the spool's memory limit (1 MiB) goes through the whole
// server: received into <data>/spool, stored in chunks, and served back
// byte for byte by the raw route and the attachment download, with nothing
// left in the spool afterwards.
func TestLargeMessageThroughTheAPI(t *testing.T) {
	data := t.TempDir()
	s := startServer(t, data)
	c, project, inbox := adminAPI(t, data, s.http)
	get := func(path string) []byte {
		t.Helper()
		req, _ := http.NewRequest("GET", "http://"+s.http+path, nil)
		req.Header.Set("Authorization", "Bearer "+c.key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d %v %.200s", path, resp.StatusCode, err, b)
		}
		return b
	}
	getJSON := func(path string, v any) {
		t.Helper()
		if err := json.Unmarshal(get(path), v); err != nil {
			t.Fatal(err)
		}
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
	getJSON(base+"/messages", &feed)
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
	if ents, err := os.ReadDir(filepath.Join(data, "spool")); err != nil || len(ents) != 0 {
		t.Errorf("spool holds %d entries (%v)", len(ents), err)
	}
}

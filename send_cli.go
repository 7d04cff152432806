package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// sendCmd sends a message through a running server's API, for smoke tests
// and shell scripts: inboxd send --to a@b --subject hi --text hello.
func sendCmd(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	fs := flag.NewFlagSet("send", flag.ContinueOnError)
	url := fs.String("url", "http://127.0.0.1:8025", "the server's HTTP address")
	key := fs.String("key", "", "API key with messages:send (default: the admin key in --data)")
	data := fs.String("data", "./inboxd-data", "data directory holding admin.key")
	from := fs.String("from", "", "inbox address to send from (default: the first inbox the key sees)")
	var to, cc listFlag
	fs.Var(&to, "to", "recipient (repeatable or comma-separated)")
	fs.Var(&cc, "cc", "cc recipient (repeatable or comma-separated)")
	subject := fs.String("subject", "", "subject")
	text := fs.String("text", "", "text body (- reads standard input)")
	html := fs.String("html", "", "HTML body")
	idem := fs.String("idempotency-key", "", "Idempotency-Key header")
	if err := parseInterleaved(fs, args, getenv); err != nil {
		return err
	}
	if err := argCount(fs, ""); err != nil {
		return err
	}
	if len(to)+len(cc) == 0 {
		return errors.New("usage: inboxd send --to ADDRESS [--subject S] [--text T] [--from INBOX]")
	}
	if *key == "" {
		b, err := os.ReadFile(filepath.Join(*data, "admin.key"))
		if err != nil {
			return fmt.Errorf("no --key and no admin key in %s: %w", *data, err)
		}
		*key = strings.TrimSpace(string(b))
	}
	if *text == "-" {
		b, err := io.ReadAll(os.Stdin)
		if err != nil {
			return err
		}
		*text = string(b)
	}
	c := apiClient{base: strings.TrimRight(*url, "/"), key: *key, http: &http.Client{Timeout: time.Minute}}
	var me struct {
		ProjectID string `json:"project_id"`
	}
	if err := c.do(ctx, "GET", "/v1/me", nil, "", &me); err != nil {
		return err
	}
	inboxID := ""
	// The inbox list pages (100 at most a page): read on until it is found.
	for page := "?limit=100"; inboxID == "" && page != ""; {
		var inboxes struct {
			Data       []struct{ ID, Address string }
			NextCursor *string `json:"next_cursor"`
		}
		if err := c.do(ctx, "GET", "/v1/projects/"+me.ProjectID+"/inboxes"+page, nil, "", &inboxes); err != nil {
			return err
		}
		for _, ib := range inboxes.Data {
			if *from == "" || strings.EqualFold(ib.Address, *from) || ib.ID == *from {
				inboxID = ib.ID
				break
			}
		}
		page = ""
		if inboxes.NextCursor != nil {
			page = "?limit=100&cursor=" + *inboxes.NextCursor // base64url and '.': safe in a query
		}
	}
	if inboxID == "" {
		return fmt.Errorf("no inbox %q visible to this key", *from)
	}
	body := map[string]any{"to": []string(to), "cc": append([]string{}, cc...), "text": *text, "html": *html}
	if *subject != "" {
		body["subject"] = *subject
	}
	var out map[string]any
	if err := c.do(ctx, "POST", "/v1/projects/"+me.ProjectID+"/inboxes/"+inboxID+"/messages", body, *idem, &out); err != nil {
		return err
	}
	b, _ := json.Marshal(out)
	fmt.Fprintln(stdout, string(b))
	return nil
}

type apiClient struct {
	base, key string
	http      *http.Client
}

func (c apiClient) do(ctx context.Context, method, path string, in any, idem string, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	req.Header.Set("Content-Type", "application/json")
	if idem != "" {
		req.Header.Set("Idempotency-Key", idem)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, strings.TrimSpace(string(b)))
	}
	return json.Unmarshal(b, out)
}

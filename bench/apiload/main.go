// Command apiload is the API load client. It first discovers what to ask
// for (the key's project from GET /v1/me, an inbox, and up to -discover
// thread and message ids through the list endpoints), then has -c clients
// request the endpoints of -mix in random order for -duration, and reports
// req/s and latency percentiles per endpoint, and errors by status.
//
//	go run ./bench/apiload -url http://127.0.0.1:8025 -key $(cat DATA/admin.key) \
//	    -c 16 -duration 20s -mix threads,thread-messages,feed,body,search -json out.json
//
// Endpoints: threads (thread list), thread (one thread), thread-messages
// (a page of 50 of a thread), feed (the inbox's message list), message,
// body, raw, search (thread list with ?q=, as the console searches) and
// search-feed (message list with ?q=).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/inboxd/inboxd/bench/loadstat"
	"github.com/inboxd/inboxd/bench/mailgen"
)

type config struct {
	url, key, mix, inbox, terms, jsonPath string
	c, discover                           int
	duration                              time.Duration
	seed                                  uint64
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "apiload:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	var cfg config
	fs := flag.NewFlagSet("apiload", flag.ContinueOnError)
	fs.StringVar(&cfg.url, "url", "http://127.0.0.1:8025", "server base URL")
	fs.StringVar(&cfg.key, "key", "", "API key (read scopes at least)")
	fs.IntVar(&cfg.c, "c", 16, "concurrent clients")
	fs.DurationVar(&cfg.duration, "duration", 20*time.Second, "how long to run")
	fs.StringVar(&cfg.mix, "mix", "threads,thread-messages,feed,body,search", "comma-separated endpoints, picked with equal weight")
	fs.StringVar(&cfg.inbox, "inbox", "inbox@localhost", "inbox address (else the first inbox of the project)")
	fs.StringVar(&cfg.terms, "terms", "", "comma-separated search terms (default: the seed vocabulary and random ref numbers)")
	fs.IntVar(&cfg.discover, "discover", 1000, "thread and message ids to collect before the run")
	fs.StringVar(&cfg.jsonPath, "json", "", "also write the report as JSON to this `file`")
	fs.Uint64Var(&cfg.seed, "seed", 1, "random seed")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if cfg.key == "" {
		return errors.New("-key is required")
	}
	if cfg.c < 1 || cfg.duration <= 0 {
		return errors.New("-c and -duration must be positive")
	}
	cl := &client{
		base: strings.TrimRight(cfg.url, "/"), key: cfg.key,
		http: &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: cfg.c}},
	}
	t, err := cl.discoverTarget(ctx, cfg)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "apiload: inbox %s, %d threads, %d messages discovered\n", t.inbox, len(t.threads), len(t.messages))
	eps := t.endpoints(cfg)
	var mix []string
	for name := range strings.SplitSeq(cfg.mix, ",") {
		name = strings.TrimSpace(name)
		// TODO(issue 7): "send" — POST …/inboxes/{inbox_id}/messages (SPEC §6)
		// to a local inbox, once the send path exists. Until then it is
		// refused rather than measured against a route that 404s.
		if name == "send" {
			return errors.New("-mix send: the send endpoint does not exist yet")
		}
		if _, ok := eps[name]; !ok {
			return fmt.Errorf("-mix: unknown endpoint %q (have %s)", name, strings.Join(slices.Sorted(maps.Keys(eps)), ", "))
		}
		mix = append(mix, name)
	}

	rec := loadstat.NewRecorder()
	runCtx, cancel := context.WithTimeout(ctx, cfg.duration)
	defer cancel()
	start := time.Now()
	var wg sync.WaitGroup
	for w := range cfg.c {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(cfg.seed, uint64(w)))
			for runCtx.Err() == nil {
				name := mix[rng.IntN(len(mix))]
				cl.request(runCtx, rec, name, eps[name](rng))
			}
		})
	}
	wg.Wait()
	rep := rec.Report("apiload", map[string]any{
		"url": cfg.url, "c": cfg.c, "duration": cfg.duration.String(), "mix": cfg.mix,
		"threads": len(t.threads), "messages": len(t.messages),
	}, time.Since(start))
	if err := rep.WriteText(stdout); err != nil {
		return err
	}
	if n := len(rep.Ops); n > 0 && rep.Ops[n-1].Errors["429"] > 0 {
		fmt.Fprintln(stdout, "apiload: 429s: the server's --api-rate-limit (per key per minute) was reached; load-test a server started with --api-rate-limit 0")
	}
	if cfg.jsonPath != "" {
		return rep.WriteJSONFile(cfg.jsonPath)
	}
	return nil
}

type client struct {
	base, key string
	http      *http.Client
}

func (cl *client) do(ctx context.Context, path string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, cl.base+path, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+cl.key)
	return cl.http.Do(req)
}

// request runs one timed request; the body is read to the end, so the
// latency covers the whole response and the connection is reused.
func (cl *client) request(ctx context.Context, rec *loadstat.Recorder, name, path string) {
	t0 := time.Now()
	resp, err := cl.do(ctx, path)
	if err != nil {
		if ctx.Err() == nil { // not the end of the run cutting a request short
			rec.Fail(name, "net")
		}
		return
	}
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	switch {
	case err != nil && ctx.Err() != nil:
	case err != nil:
		rec.Fail(name, "net")
	case resp.StatusCode != http.StatusOK:
		rec.Fail(name, strconv.Itoa(resp.StatusCode))
	default:
		rec.Observe(name, time.Since(t0), int(n))
	}
}

// getJSON fetches path into v, failing on any status but 200.
func (cl *client) getJSON(ctx context.Context, path string, v any) error {
	resp, err := cl.do(ctx, path)
	if err != nil {
		return fmt.Errorf("GET %s: %w", path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("GET %s: %s: %s", path, resp.Status, body)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		return fmt.Errorf("GET %s: %w", path, err)
	}
	return nil
}

// target is what discovery found: the inbox path and ids to pick from.
type target struct {
	inbox             string // "/v1/projects/{p}/inboxes/{i}"
	threads, messages []string
}

func (cl *client) discoverTarget(ctx context.Context, cfg config) (target, error) {
	var me struct {
		ProjectID string `json:"project_id"`
	}
	if err := cl.getJSON(ctx, "/v1/me", &me); err != nil {
		return target{}, err
	}
	var inboxes struct {
		Data []struct{ ID, Address string }
	}
	if err := cl.getJSON(ctx, "/v1/projects/"+me.ProjectID+"/inboxes?limit=100", &inboxes); err != nil {
		return target{}, err
	}
	if len(inboxes.Data) == 0 {
		return target{}, errors.New("the key sees no inbox")
	}
	ib := inboxes.Data[0]
	for _, x := range inboxes.Data {
		if strings.EqualFold(x.Address, cfg.inbox) {
			ib = x
		}
	}
	t := target{inbox: "/v1/projects/" + me.ProjectID + "/inboxes/" + ib.ID}
	var err error
	if t.threads, err = cl.collectIDs(ctx, t.inbox+"/threads", cfg.discover); err != nil {
		return target{}, err
	}
	if t.messages, err = cl.collectIDs(ctx, t.inbox+"/messages", cfg.discover); err != nil {
		return target{}, err
	}
	if len(t.threads) == 0 || len(t.messages) == 0 {
		return target{}, fmt.Errorf("inbox %s holds no messages: seed it first (go run ./bench/seed)", ib.Address)
	}
	return t, nil
}

// collectIDs follows a list's cursors until it has n ids or the list ends.
func (cl *client) collectIDs(ctx context.Context, list string, n int) ([]string, error) {
	var ids []string
	cursor := ""
	for len(ids) < n {
		var page struct {
			Data       []struct{ ID string }
			NextCursor *string `json:"next_cursor"`
		}
		if err := cl.getJSON(ctx, list+"?limit=100&cursor="+url.QueryEscape(cursor), &page); err != nil {
			return nil, err
		}
		for _, d := range page.Data {
			ids = append(ids, d.ID)
		}
		if page.NextCursor == nil {
			break
		}
		cursor = *page.NextCursor
	}
	return ids[:min(n, len(ids))], nil
}

// endpoints maps each endpoint name to a function that picks a path for
// one request.
func (t target) endpoints(cfg config) map[string]func(*rand.Rand) string {
	pick := func(rng *rand.Rand, ids []string) string { return ids[rng.IntN(len(ids))] }
	var terms []string
	if cfg.terms != "" {
		terms = strings.Split(cfg.terms, ",")
	}
	term := func(rng *rand.Rand) string {
		switch {
		case len(terms) > 0:
			return url.QueryEscape(pick(rng, terms))
		case rng.IntN(4) == 0: // a selective term: mailgen numbers every paragraph
			return "ref" + strconv.Itoa(rng.IntN(100000))
		default:
			return url.QueryEscape(pick(rng, mailgen.Vocabulary))
		}
	}
	return map[string]func(*rand.Rand) string{
		"threads":         func(*rand.Rand) string { return t.inbox + "/threads" },
		"thread":          func(r *rand.Rand) string { return t.inbox + "/threads/" + pick(r, t.threads) },
		"thread-messages": func(r *rand.Rand) string { return t.inbox + "/threads/" + pick(r, t.threads) + "/messages" },
		"feed":            func(*rand.Rand) string { return t.inbox + "/messages" },
		"message":         func(r *rand.Rand) string { return t.inbox + "/messages/" + pick(r, t.messages) },
		"body":            func(r *rand.Rand) string { return t.inbox + "/messages/" + pick(r, t.messages) + "/body" },
		"raw":             func(r *rand.Rand) string { return t.inbox + "/messages/" + pick(r, t.messages) + "/raw" },
		"search":          func(r *rand.Rand) string { return t.inbox + "/threads?q=" + term(r) },
		"search-feed":     func(r *rand.Rand) string { return t.inbox + "/messages?q=" + term(r) },
	}
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	gomcp "github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkMCPReadThread: read_thread of a 50-message thread (stored over
// SMTP, each reply a few lines above the quoted one before it) by 16
// concurrent SDK clients over streamable HTTP, b.N calls in all; it
// reports the latency percentiles of one call and the messages the
// answer held: all 50 with max_chars=131072, the first page at the
// default 40,000 characters.
func BenchmarkMCPReadThread(b *testing.B) {
	data := b.TempDir()
	s := startServer(b, data)
	defer s.stop()
	c, project, inbox := adminAPI(b, data, s.http)
	key := newKey(b, c, project, readScopes, nil)
	quoted := ""
	for i := range 50 {
		reply := fmt.Sprintf("Message %d of the thread. Thanks for the update on the order; we can confirm the\r\n"+
			"delivery window for next week and will send the signed form by Friday.\r\n", i)
		h := fmt.Sprintf("From: Ann Example <ann@example.com>\r\nTo: inbox@localhost\r\nMessage-ID: <bench%d@example.com>\r\nSubject: Re: Order 1234\r\n", i)
		if i > 0 {
			h += fmt.Sprintf("In-Reply-To: <bench%d@example.com>\r\n", i-1)
		}
		mustSend(b, s.smtp, "inbox@localhost", h+"\r\n"+reply+"\r\nOn Monday Ann wrote:\r\n"+quoted)
		quoted = "> " + strings.ReplaceAll(reply, "\r\n", "\r\n> ") + "\r\n"
	}
	cs := mcpSession(b, s.http, key)
	var threads struct{ Threads []struct{ ID string } }
	structured(b, call(b, cs, "list_threads", map[string]any{"inbox_id": inbox}), &threads)
	thread := threads.Threads[0].ID

	transport := &http.Transport{MaxIdleConnsPerHost: 32}
	defer transport.CloseIdleConnections()
	// The calls of one client: the SDK's (which decodes and checks every
	// result, in this process), or plain HTTP posts of the JSON-RPC
	// request whose answers are only read, as bench/apiload reads the
	// REST API's: that one measures the server.
	sdkClient := func(args map[string]any) func() error {
		cl := gomcp.NewClient(&gomcp.Implementation{Name: "bench", Version: "1"}, nil)
		cs, err := cl.Connect(context.Background(), &gomcp.StreamableClientTransport{Endpoint: "http://" + s.http + "/mcp",
			HTTPClient: &http.Client{Transport: bearer{key, transport}}, DisableStandaloneSSE: true}, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { cs.Close() })
		return func() error {
			res, err := cs.CallTool(context.Background(), &gomcp.CallToolParams{Name: "read_thread", Arguments: args})
			if err == nil && res.IsError {
				err = fmt.Errorf("%s", text(res))
			}
			return err
		}
	}
	httpClient := func(args map[string]any) func() error {
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": map[string]any{"name": "read_thread", "arguments": args}})
		hc := &http.Client{Transport: transport}
		return func() error {
			req, _ := http.NewRequest("POST", "http://"+s.http+"/mcp", bytes.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+key)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
			resp, err := hc.Do(req)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			got, err := io.ReadAll(resp.Body)
			if err == nil && (resp.StatusCode != 200 || !bytes.Contains(got, []byte(`"structuredContent"`))) {
				err = fmt.Errorf("%d %.300s", resp.StatusCode, got)
			}
			return err
		}
	}
	for _, v := range []struct {
		client   string
		dial     func(map[string]any) func() error
		maxChars int
	}{{"sdk", sdkClient, 131072}, {"http", httpClient, 131072}, {"http", httpClient, 40000}} {
		b.Run(fmt.Sprintf("client=%s/clients=16/max_chars=%d", v.client, v.maxChars), func(b *testing.B) {
			const clients = 16
			args := map[string]any{"inbox_id": inbox, "thread_id": thread, "max_chars": v.maxChars}
			var read struct{ Messages []struct{ Sequence int } }
			structured(b, call(b, cs, "read_thread", args), &read)
			calls := make([]func() error, clients)
			for i := range calls {
				calls[i] = v.dial(args)
			}
			lat := make([]time.Duration, b.N)
			var next atomic.Int64
			var wg sync.WaitGroup
			b.ResetTimer()
			cpu0 := cpuTime()
			start := time.Now()
			for _, do := range calls {
				wg.Go(func() {
					for {
						i := next.Add(1) - 1
						if i >= int64(b.N) {
							return
						}
						t0 := time.Now()
						err := do()
						lat[i] = time.Since(t0)
						if err != nil {
							b.Errorf("read_thread: %v", err)
							return
						}
					}
				})
			}
			wg.Wait()
			elapsed, cpu := time.Since(start), cpuTime()-cpu0
			b.StopTimer()
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
			b.ReportMetric(ms(lat[len(lat)/2]), "p50-ms")
			b.ReportMetric(ms(lat[len(lat)*99/100]), "p99-ms")
			b.ReportMetric(ms(lat[len(lat)-1]), "max-ms")
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "calls/s")
			b.ReportMetric(ms(cpu)/float64(b.N), "cpu-ms/call")
			b.ReportMetric(float64(len(read.Messages)), "messages")
		})
	}
}

// cpuTime is the CPU time this process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

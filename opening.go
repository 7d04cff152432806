package main

import (
	"bufio"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// openingRetryAfter is what clients that connect while the database
// opens are told to wait.
const openingRetryAfter = "30"

// openingListener is a bound listener and how to answer on it while the
// database opens: over TLS when tls is set, HTTP or SMTP.
type openingListener struct {
	l    net.Listener
	tls  *tls.Config
	http bool
}

// answerWhileOpening answers on the bound listeners until stop is called,
// while the database opens: migrating a large one (rebuilding its search
// index, say) takes minutes, and a client must not hang on a listener
// nobody accepts on. SMTP clients get `421 4.3.2` (they retry later, as
// for any temporary failure) and HTTP clients `503` with Retry-After
// (/readyz included, so a load balancer waits). stop returns once no
// connection is being answered and the listeners are free for the real
// servers.
func answerWhileOpening(hostname string, ls ...openingListener) (stop func()) {
	var wg sync.WaitGroup
	var lns []*net.TCPListener
	serve := func(ol openingListener, answer func(net.Conn)) {
		tl, ok := ol.l.(*net.TCPListener)
		if !ok {
			return
		}
		lns = append(lns, tl)
		wg.Go(func() {
			for {
				c, err := tl.Accept()
				if err != nil {
					var ne net.Error
					if errors.As(err, &ne) && ne.Timeout() {
						return // stop's deadline
					}
					if errors.Is(err, net.ErrClosed) {
						return
					}
					continue
				}
				wg.Go(func() {
					c.SetDeadline(time.Now().Add(5 * time.Second))
					if ol.tls != nil {
						c = tls.Server(c, ol.tls)
					}
					defer c.Close()
					answer(c)
				})
			}
		})
	}
	greeting := "421 4.3.2 " + hostname + " is opening its database (an upgrade may take minutes); try again later\r\n"
	answerHTTP := func(c net.Conn) {
		req, err := http.ReadRequest(bufio.NewReader(c))
		if err != nil {
			return
		}
		status, body := http.StatusServiceUnavailable, `{"error":{"code":"temporarily_unavailable","message":"The server is opening its database (an upgrade may take minutes); try again later."}}`+"\n"
		header := http.Header{"Content-Type": {"application/json"}, "Retry-After": {openingRetryAfter}}
		if req.URL.Path == "/healthz" {
			// Liveness: the process is alive, so a probe does not restart
			// it in the middle of a migration (readiness is /readyz).
			status, body = http.StatusOK, `{"status":"ok"}`+"\n"
			header.Del("Retry-After")
		}
		resp := &http.Response{StatusCode: status, ProtoMajor: 1, ProtoMinor: 1, Request: req, Close: true,
			Header: header, Body: io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body))}
		resp.Write(c)
	}
	for _, ol := range ls {
		switch {
		case ol.l == nil:
		case ol.http:
			serve(ol, answerHTTP)
		default:
			serve(ol, func(c net.Conn) { io.WriteString(c, greeting) })
		}
	}
	return func() {
		for _, l := range lns {
			l.SetDeadline(time.Now()) // ends the Accept loops
		}
		wg.Wait()
		for _, l := range lns {
			l.SetDeadline(time.Time{})
		}
	}
}

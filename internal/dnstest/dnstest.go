// Package dnstest is a DNS server on loopback for tests: what a resolver
// answers about mail exchangers, from a fixed zone, over real UDP.
package dnstest

import (
	"context"
	"net"
	"strings"
	"testing"

	"golang.org/x/net/dns/dnsmessage"
)

// Zone is what the fake DNS server knows: MX records (a host of "."
// is a null MX) and A records; any other name does not exist.
type Zone struct {
	MX map[string][]string
	A  map[string]net.IP
}

// Serve serves zone over UDP on loopback until the test ends, and
// returns its address and a net.Resolver that asks it alone.
func Serve(t testing.TB, zone Zone) (addr string, r *net.Resolver) {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if out := answer(zone, buf[:n]); out != nil {
				pc.WriteTo(out, from)
			}
		}
	}()
	addr = pc.LocalAddr().String()
	return addr, &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", addr)
	}}
}

func answer(zone Zone, query []byte) []byte {
	var p dnsmessage.Parser
	h, err := p.Start(query)
	if err != nil {
		return nil
	}
	q, err := p.Question()
	if err != nil {
		return nil
	}
	name := strings.ToLower(strings.TrimSuffix(q.Name.String(), "."))
	_, hasMX := zone.MX[name]
	_, hasA := zone.A[name]
	rcode := dnsmessage.RCodeSuccess
	if !hasMX && !hasA {
		rcode = dnsmessage.RCodeNameError
	}
	b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RCode: rcode})
	b.StartQuestions()
	b.Question(q)
	b.StartAnswers()
	rh := dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 60}
	switch {
	case q.Type == dnsmessage.TypeMX:
		for i, host := range zone.MX[name] {
			b.MXResource(rh, dnsmessage.MXResource{Pref: uint16(10 * (i + 1)), MX: dnsmessage.MustNewName(strings.TrimSuffix(host, ".") + ".")})
		}
	case q.Type == dnsmessage.TypeA && hasA:
		var ip [4]byte
		copy(ip[:], zone.A[name].To4())
		b.AResource(rh, dnsmessage.AResource{A: ip})
	}
	out, _ := b.Finish()
	return out
}

package webhook

import (
	"context"
	"net/netip"
	"net/url"
	"testing"
)

// TestDeniedRanges is the classifier's table: every non-global range at
// both edges, the addresses just outside them, and the IPv6 forms that
// carry an IPv4 address, judged by the address they carry.
func TestDeniedRanges(t *testing.T) {
	denied := []string{
		// IPv4
		"0.0.0.0", "0.255.255.255", // this network
		"10.0.0.0", "10.255.255.255",
		"100.64.0.0", "100.127.255.255", // CGNAT
		"127.0.0.0", "127.0.0.1", "127.255.255.255",
		"169.254.0.0", "169.254.169.254", "169.254.255.255",
		"172.16.0.0", "172.31.255.255",
		"192.0.0.0", "192.0.0.255", // IETF protocol assignments
		"192.0.2.0", "192.0.2.255", // TEST-NET-1
		"192.88.99.0", "192.88.99.255", // 6to4 relay anycast
		"192.168.0.0", "192.168.255.255",
		"198.18.0.0", "198.19.255.255", // benchmarking
		"198.51.100.0", "198.51.100.255", // TEST-NET-2
		"203.0.113.0", "203.0.113.255", // TEST-NET-3
		"224.0.0.0", "239.255.255.255", // multicast
		"240.0.0.0", "255.255.255.254", "255.255.255.255", // reserved, broadcast
		// IPv6
		"::", "::1", // unspecified, loopback
		"100::", "100::ffff:ffff:ffff:ffff", // discard
		"fc00::", "fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", // unique-local
		"fe80::", "fe80::1%eth0", "febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff", // link-local
		"fec0::", "feff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", // site-local
		"ff00::", "ff02::1", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", // multicast
		"2001:db8::", "2001:db8:ffff:ffff:ffff:ffff:ffff:ffff", // documentation
		"3fff::", "3fff:fff:ffff:ffff:ffff:ffff:ffff:ffff", // documentation (RFC 9637)
		"2001:2::", "2001:10::1", "2001:20::1", "2001:1ff:ffff:ffff:ffff:ffff:ffff:ffff", // IETF: benchmarking, ORCHID
		"5f00::1", // SRv6 SIDs
		"1fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "4000::", // outside 2000::/3
		"64:ff9b:1::", "64:ff9b:1:ffff:ffff:ffff:ffff:ffff", // local-use NAT64
		// IPv4 carried in IPv6
		"::ffff:127.0.0.1", "::ffff:10.0.0.1", "::ffff:100.64.0.1", "::ffff:255.255.255.255", // mapped
		"::127.0.0.1", "::169.254.169.254", "::100.64.0.1", "::198.18.0.1", // compatible
		"64:ff9b::127.0.0.1", "64:ff9b::a9fe:a9fe", "64:ff9b::100.64.0.1", "64:ff9b::192.0.2.1", // NAT64
		"2002:7f00:1::", "2002:a9fe:a9fe::1", "2002:c0a8:101::", "2002:6440:1::", // 6to4
		"2001:0:4136:e378:8000:63bf:80ff:fffe", // Teredo, client 127.0.0.1
		"2001:0:4136:e378:8000:63bf:f5ff:fefe", // Teredo, client 10.0.1.1
	}
	allowed := []string{
		"1.0.0.0", "8.8.8.8", "9.255.255.255", "11.0.0.0",
		"100.63.255.255", "100.128.0.0",
		"126.255.255.255", "128.0.0.0",
		"169.253.255.255", "169.255.0.0",
		"172.15.255.255", "172.32.0.0",
		"191.255.255.255", "192.0.1.0", "192.0.3.0",
		"192.88.98.255", "192.88.100.0",
		"192.167.255.255", "192.169.0.0",
		"198.17.255.255", "198.20.0.0",
		"198.51.99.255", "198.51.101.0",
		"203.0.112.255", "203.0.114.0",
		"223.255.255.255",
		"2000::", "2001:200::", "2001:db7:ffff:ffff:ffff:ffff:ffff:ffff", "2001:db9::",
		"2606:4700::1111", "2a00:1450:4001::200e",
		"3ffe:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "3fff:1000::",
		"::ffff:8.8.8.8", "::8.8.8.8", "64:ff9b::8.8.8.8", "2002:808:808::1",
		"2001:0:4136:e378:8000:63bf:f7f7:f7f7", // Teredo, client 8.8.8.8
	}
	for _, s := range denied {
		if !Denied(netip.MustParseAddr(s)) {
			t.Errorf("Denied(%s) = false, want true", s)
		}
	}
	for _, s := range allowed {
		if Denied(netip.MustParseAddr(s)) {
			t.Errorf("Denied(%s) = true, want false", s)
		}
	}
	if !Denied(netip.Addr{}) {
		t.Error("the zero Addr is allowed")
	}
}

// TestCheckURLUsesDenied: registration refuses by the same rules, for a
// literal address in any of its forms.
func TestCheckURLUsesDenied(t *testing.T) {
	ctx := context.Background()
	for _, u := range []string{"http://100.100.100.200/latest/meta-data", "http://198.18.0.1/", "http://255.255.255.255/",
		"http://[fec0::1]/", "http://[::127.0.0.1]/", "http://[64:ff9b::a9fe:a9fe]/", "http://[2002:7f00:1::]/", "http://[fe80::1%25eth0]/"} {
		pu, err := url.Parse(u)
		if err != nil {
			t.Fatal(err)
		}
		if err := CheckURL(ctx, pu); err == nil {
			t.Errorf("CheckURL(%s) allowed", u)
		}
	}
}

package webhook

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"syscall"
)

// nonGlobal4 are the IPv4 ranges that are not global unicast: the IANA
// special-purpose registry (RFC 6890 and its updates) where a block is not
// globally reachable, plus multicast and the reserved 240/4 (which holds
// the limited broadcast 255.255.255.255).
var nonGlobal4 = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),       // "this network" (RFC 791); 0.0.0.0 reaches the local host
	netip.MustParsePrefix("10.0.0.0/8"),      // private (RFC 1918)
	netip.MustParsePrefix("100.64.0.0/10"),   // shared address space, CGNAT (RFC 6598); cloud metadata lives here
	netip.MustParsePrefix("127.0.0.0/8"),     // loopback
	netip.MustParsePrefix("169.254.0.0/16"),  // link-local (RFC 3927), 169.254.169.254 metadata
	netip.MustParsePrefix("172.16.0.0/12"),   // private
	netip.MustParsePrefix("192.0.0.0/24"),    // IETF protocol assignments (RFC 6890)
	netip.MustParsePrefix("192.0.2.0/24"),    // documentation, TEST-NET-1 (RFC 5737)
	netip.MustParsePrefix("192.88.99.0/24"),  // 6to4 relay anycast, deprecated (RFC 7526)
	netip.MustParsePrefix("192.168.0.0/16"),  // private
	netip.MustParsePrefix("198.18.0.0/15"),   // benchmarking (RFC 2544)
	netip.MustParsePrefix("198.51.100.0/24"), // documentation, TEST-NET-2
	netip.MustParsePrefix("203.0.113.0/24"),  // documentation, TEST-NET-3
	netip.MustParsePrefix("224.0.0.0/4"),     // multicast
	netip.MustParsePrefix("240.0.0.0/4"),     // reserved (RFC 1112), and 255.255.255.255 broadcast
}

// global6 is the only IPv6 space IANA allocates global unicast from
// (RFC 4291 §2.4); everything outside it (::/8, 100::/64 discard, 5f00::/16
// SRv6, fc00::/7 unique-local, fe80::/10 link-local, fec0::/10 site-local,
// ff00::/8 multicast, …) is refused, once the IPv4-embedding forms below
// have been looked through.
var global6 = netip.MustParsePrefix("2000::/3")

// nonGlobal6 are the blocks inside 2000::/3 that are not global unicast.
var nonGlobal6 = []netip.Prefix{
	netip.MustParsePrefix("2001::/23"),     // IETF protocol assignments: benchmarking, ORCHID, … (RFC 2928); Teredo is looked through first
	netip.MustParsePrefix("2001:db8::/32"), // documentation (RFC 3849)
	netip.MustParsePrefix("3fff::/20"),     // documentation (RFC 9637)
}

var (
	nat64     = netip.MustParsePrefix("64:ff9b::/96") // well-known NAT64 prefix (RFC 6052)
	nat64Site = netip.MustParsePrefix("64:ff9b:1::/48")
	teredo    = netip.MustParsePrefix("2001::/32")
	sixToFour = netip.MustParsePrefix("2002::/16")
	compat    = netip.MustParsePrefix("::/96") // IPv4-compatible, deprecated (RFC 4291 §2.5.5.1)
)

// Denied reports whether an address is one --webhook-deny-private keeps
// deliveries away from: every address that is not global unicast. It is
// the one classifier, used at registration (CheckURL) and at connect time
// (denyPrivateControl). An IPv6 address that carries an IPv4 address
// (mapped, compatible, NAT64, 6to4, Teredo) is judged by the IPv4 address
// it reaches, so ::ffff:127.0.0.1 or 64:ff9b::a9fe:a9fe cannot smuggle a
// private target past the IPv4 rules.
func Denied(ip netip.Addr) bool {
	ip = ip.WithZone("") // a zone scopes a link-local address; Prefix.Contains never matches a zoned one
	if v4, ok := embeddedIPv4(ip); ok {
		ip = v4
	}
	switch {
	case ip.Is4():
		return inAny(ip, nonGlobal4)
	case ip.Is6():
		return !global6.Contains(ip) || inAny(ip, nonGlobal6)
	}
	return true // the zero Addr
}

// embeddedIPv4 returns the IPv4 address an IPv6 address is a form of.
// 64:ff9b:1::/48 (RFC 8215) is local-use, with a layout each operator
// chooses: it is not looked through, and as it lies outside 2000::/3 it is
// refused.
func embeddedIPv4(ip netip.Addr) (netip.Addr, bool) {
	if !ip.Is6() || nat64Site.Contains(ip) {
		return netip.Addr{}, false
	}
	b := ip.As16()
	switch {
	case ip.Is4In6():
		return ip.Unmap(), true
	case compat.Contains(ip), nat64.Contains(ip):
		return netip.AddrFrom4([4]byte(b[12:16])), true
	case sixToFour.Contains(ip):
		return netip.AddrFrom4([4]byte(b[2:6])), true
	case teredo.Contains(ip):
		// The client's address, the one a relay delivers to, is stored
		// with every bit inverted (RFC 4380 §4).
		return netip.AddrFrom4([4]byte{^b[12], ^b[13], ^b[14], ^b[15]}), true
	}
	return netip.Addr{}, false
}

func inAny(ip netip.Addr, ps []netip.Prefix) bool {
	for _, p := range ps {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// CheckURL refuses, at registration, a URL whose host is or resolves to a
// denied address. It is a courtesy that fails early: the check that
// decides is the dialer's, at connect time, since DNS may answer
// differently by then.
func CheckURL(ctx context.Context, u *url.URL) error {
	host := u.Hostname()
	if ip, err := netip.ParseAddr(host); err == nil {
		if Denied(ip) {
			return fmt.Errorf("%s is not a global unicast address", ip)
		}
		return nil
	}
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return fmt.Errorf("cannot resolve %s", host)
	}
	for _, ip := range ips {
		if Denied(ip) {
			return fmt.Errorf("%s resolves to %s, not a global unicast address", host, ip.Unmap())
		}
	}
	return nil
}

// denyPrivateControl is a net.Dialer Control function: it runs after name
// resolution with the address actually being connected to, so a name that
// resolves to a public address at registration and to a private one later
// (DNS rebinding) is still refused.
func denyPrivateControl(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("webhook target %s: %w", address, err)
	}
	if Denied(ap.Addr()) {
		return fmt.Errorf("webhook target %s refused: not a global unicast address (--webhook-deny-private)", ap.Addr().Unmap())
	}
	return nil
}

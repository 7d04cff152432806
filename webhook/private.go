package webhook

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"syscall"
)

// Denied reports whether an address is one --webhook-deny-private keeps
// deliveries away from: loopback, private (RFC 1918, RFC 4193),
// link-local, and the unspecified address (which reaches the local host).
func Denied(ip netip.Addr) bool {
	ip = ip.Unmap()
	return ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
		ip.IsInterfaceLocalMulticast() || ip.IsUnspecified()
}

// CheckURL refuses, at registration, a URL whose host is or resolves to a
// denied address. It is a courtesy that fails early: the check that
// decides is the dialer's, at connect time, since DNS may answer
// differently by then.
func CheckURL(ctx context.Context, u *url.URL) error {
	host := u.Hostname()
	if ip, err := netip.ParseAddr(host); err == nil {
		if Denied(ip) {
			return fmt.Errorf("%s is a loopback, private or link-local address", ip)
		}
		return nil
	}
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return fmt.Errorf("cannot resolve %s", host)
	}
	for _, ip := range ips {
		if Denied(ip) {
			return fmt.Errorf("%s resolves to %s, a loopback, private or link-local address", host, ip.Unmap())
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
		return fmt.Errorf("webhook target %s refused: loopback, private or link-local address (--webhook-deny-private)", ap.Addr().Unmap())
	}
	return nil
}

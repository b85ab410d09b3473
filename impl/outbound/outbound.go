// Package outbound is the policy every address the server dials on a
// caller's behalf is checked against (README, "Outbound address policy"):
// without it a caller could make the server send a validator's credentials,
// or probe a port, anywhere it can reach.
package outbound

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// Policy says which addresses may be dialled. The zero Policy refuses
// every address.
type Policy struct {
	// Hosts are the allowed hosts: exact names ("keycloak.example.com"),
	// suffix patterns ("*.validators.svc.cluster.local"), IP addresses or
	// CIDRs.
	Hosts []string
	// AnyHost allows hosts not in Hosts (the address rules below still
	// apply).
	AnyHost bool
	// RequireHTTPS refuses http:// URLs except to PlainHosts.
	RequireHTTPS bool
	// PlainHosts may be reached over http:// although RequireHTTPS is set
	// (the namespace's own Services), in the same forms as Hosts.
	PlainHosts []string
	// AllowPrivate allows loopback, link-local (which holds the cloud
	// metadata address 169.254.169.254) and unspecified addresses. An IP
	// or CIDR listed in Hosts is allowed without it.
	AllowPrivate bool
	// Own, when set, allows host:port addresses the server itself serves
	// (the embedded default's sandbox network), whatever the rules above.
	Own func(hostport string) bool
}

// RefusedError is an address the policy refuses.
type RefusedError struct {
	Address string
	Reason  string
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("address %s is refused by the outbound address policy (outbound.allowedHosts, outbound.allowHttp, outbound.allowPrivate): %s", e.Address, e.Reason)
}

// ErrRefused matches every RefusedError with errors.Is.
var ErrRefused = errors.New("refused by the outbound address policy")

func (e *RefusedError) Is(target error) bool { return target == ErrRefused }

func refuse(addr, format string, args ...any) error {
	return &RefusedError{Address: addr, Reason: fmt.Sprintf(format, args...)}
}

// CheckURL checks an http(s) URL: its scheme, then its host and port.
func (p *Policy) CheckURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.Hostname() == "" {
		return refuse(raw, "not an absolute http(s) URL with a host")
	}
	if u.User != nil {
		return refuse(u.Redacted(), "a URL must not carry credentials")
	}
	port := u.Port()
	switch u.Scheme {
	case "https":
		if port == "" {
			port = "443"
		}
	case "http":
		if port == "" {
			port = "80"
		}
		if p.RequireHTTPS && !p.own(u.Hostname(), port) && !matchAny(p.PlainHosts, u.Hostname()) {
			return refuse(u.Redacted(), "https is required (outbound.allowHttp allows http)")
		}
	default:
		return refuse(u.Redacted(), "scheme %q is not http or https", u.Scheme)
	}
	return p.CheckHost(u.Hostname(), port)
}

// CheckHost checks a host (name or IP) and port.
func (p *Policy) CheckHost(host, port string) error {
	addr := net.JoinHostPort(host, port)
	if p.own(host, port) {
		return nil
	}
	if host == "" {
		return refuse(addr, "no host")
	}
	listed := matchAny(p.Hosts, host)
	if !p.AnyHost && !listed {
		allowed := strings.Join(p.Hosts, ", ")
		if allowed == "" {
			allowed = "none besides the server's own"
		}
		return refuse(addr, "host %q is not allowed (allowed: %s)", host, allowed)
	}
	if ip, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		if special(ip) && !p.AllowPrivate && !ipListed(p.Hosts, ip) {
			return refuse(addr, "loopback, link-local and cloud metadata addresses are not allowed")
		}
	} else if isLocalName(host) && !p.AllowPrivate && !listed {
		return refuse(addr, "loopback names are not allowed")
	}
	return nil
}

func (p *Policy) own(host, port string) bool {
	return p.Own != nil && p.Own(net.JoinHostPort(host, port))
}

// Control is a net.Dialer Control function that checks the resolved
// address: a name that passed CheckHost may still resolve to loopback.
func (p *Policy) Control(_, address string, _ syscall.RawConn) error {
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return refuse(address, "not host:port")
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return nil
	}
	ip = ip.Unmap()
	if special(ip) && !p.AllowPrivate && !ipListed(p.Hosts, ip) && !p.own(host, port) {
		return refuse(address, "resolves to a loopback, link-local or cloud metadata address")
	}
	return nil
}

// Dialer is a dialer that applies Control.
func (p *Policy) Dialer(timeout time.Duration) *net.Dialer {
	return &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second, Control: p.Control}
}

// Transport is http.DefaultTransport's settings with the policy's dialer,
// and a check of every request's URL: redirects included.
func (p *Policy) Transport() http.RoundTripper {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = p.Dialer(30 * time.Second).DialContext
	return checked{p: p, next: t}
}

type checked struct {
	p    *Policy
	next http.RoundTripper
}

// PolicyOf is the policy a transport made by Transport applies, nil for
// any other transport: a client that reaches the same upstreams over
// another protocol (the participant admin gRPC API) dials through it too.
func PolicyOf(rt http.RoundTripper) *Policy {
	if c, ok := rt.(checked); ok {
		return c.p
	}
	return nil
}

func (c checked) RoundTrip(r *http.Request) (*http.Response, error) {
	if err := c.p.CheckURL(r.URL.String()); err != nil {
		if r.Body != nil {
			r.Body.Close()
		}
		return nil, err
	}
	return c.next.RoundTrip(r)
}

// DialContext dials with the policy's dialer after CheckHost.
func (p *Policy) DialContext(ctx context.Context, timeout time.Duration, host, port string) (net.Conn, error) {
	if err := p.CheckHost(host, port); err != nil {
		return nil, err
	}
	return p.Dialer(timeout).DialContext(ctx, "tcp", net.JoinHostPort(host, port))
}

var metadataV6 = netip.MustParseAddr("fd00:ec2::254")

// special: loopback, link-local (169.254.0.0/16 holds the metadata
// address of most clouds), unspecified, and AWS's IPv6 metadata address.
func special(ip netip.Addr) bool {
	ip = ip.Unmap()
	return ip.IsLoopback() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() || ip.IsUnspecified() || ip == metadataV6
}

func isLocalName(host string) bool {
	h := strings.TrimSuffix(strings.ToLower(host), ".")
	return h == "localhost" || strings.HasSuffix(h, ".localhost") || h == "metadata.google.internal"
}

func matchAny(patterns []string, host string) bool {
	h := strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	ip, ipErr := netip.ParseAddr(h)
	for _, p := range patterns {
		p = strings.ToLower(strings.TrimSpace(p))
		switch {
		case p == "":
		case strings.HasPrefix(p, "*."):
			if strings.HasSuffix(h, p[1:]) && len(h) > len(p)-1 {
				return true
			}
		case ipErr == nil:
			if ipListed([]string{p}, ip) {
				return true
			}
		case p == h:
			return true
		}
	}
	return false
}

// ipListed: the IP is named by an IP or CIDR entry (a deliberate allowance
// of that address, unlike a name pattern).
func ipListed(patterns []string, ip netip.Addr) bool {
	for _, p := range patterns {
		p = strings.TrimSpace(p)
		if pre, err := netip.ParsePrefix(p); err == nil && pre.Contains(ip.Unmap()) {
			return true
		}
		if a, err := netip.ParseAddr(p); err == nil && a.Unmap() == ip.Unmap() {
			return true
		}
	}
	return false
}

// Cluster is the policy of a server in a cluster: the namespace's Services,
// the hosts of the providers' URLs and extra hosts, over https unless allowHTTP.
func Cluster(namespace string, providers, extra []string, allowHTTP, allowPrivate bool) *Policy {
	own := []string{"*." + namespace + ".svc", "*." + namespace + ".svc.cluster.local"}
	hosts := append([]string(nil), own...)
	for _, raw := range providers {
		if u, err := url.Parse(raw); err == nil && u.Hostname() != "" {
			hosts = append(hosts, u.Hostname())
		}
	}
	return &Policy{Hosts: append(hosts, extra...), RequireHTTPS: !allowHTTP, PlainHosts: own, AllowPrivate: allowPrivate}
}

// Embedded is the policy of the embedded default: its own sandbox network
// (own) and extra hosts only.
func Embedded(own func(hostport string) bool, extra []string, allowPrivate bool) *Policy {
	return &Policy{Hosts: extra, Own: own, AllowPrivate: allowPrivate}
}

// SplitHosts splits a comma-separated list of hosts (the configuration's
// form), dropping blanks.
func SplitHosts(s string) []string {
	var out []string
	for _, h := range strings.Split(s, ",") {
		if h = strings.TrimSpace(h); h != "" {
			out = append(out, h)
		}
	}
	return out
}

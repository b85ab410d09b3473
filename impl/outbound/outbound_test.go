package outbound_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/validator-manager/validator-manager/impl/outbound"
)

func TestClusterPolicy(t *testing.T) {
	p := outbound.Cluster("validators", []string{"https://keycloak.example.com/realms/v", ""}, []string{"scan.sv-1.example.com", "*.partners.example.net"}, false, false)
	tests := []struct {
		url string
		ok  bool
	}{
		{"http://v1-participant.validators.svc.cluster.local:7575", true}, // the namespace's Services, plain http
		{"https://v1-validator-app.validators.svc:5003", true},
		{"https://keycloak.example.com/realms/v/protocol/openid-connect/token", true},
		{"https://scan.sv-1.example.com/api/scan", true},
		{"https://a.partners.example.net", true},
		{"http://scan.sv-1.example.com", false},                   // https required
		{"https://attacker.example.org/token", false},             // not allowed
		{"https://v1-participant.other.svc.cluster.local", false}, // another namespace
		{"https://169.254.169.254/latest/meta-data", false},       // metadata
		{"https://127.0.0.1:6060", false},                         // loopback
		{"https://localhost", false},                              // loopback name
		{"https://[::1]:443", false},                              // loopback v6
		{"ftp://scan.sv-1.example.com", false},                    // scheme
		{"https://user:pw@scan.sv-1.example.com", false},          // credentials in the URL
		{"scan.sv-1.example.com", false},                          // not absolute
		{"https://evil.example.com.partners.example.net.attacker", false},
	}
	for _, tt := range tests {
		err := p.CheckURL(tt.url)
		if (err == nil) != tt.ok {
			t.Errorf("CheckURL(%q): got %v, want ok=%v", tt.url, err, tt.ok)
		}
		if err != nil && (!errors.Is(err, outbound.ErrRefused) || !strings.Contains(err.Error(), "outbound address policy")) {
			t.Errorf("CheckURL(%q): error %v does not name the policy", tt.url, err)
		}
	}
	if err := outbound.Cluster("validators", nil, nil, true, false).CheckURL("http://scan.validators.svc"); err != nil {
		t.Errorf("allowHttp: %v", err)
	}
	if err := outbound.Cluster("validators", nil, []string{"127.0.0.1"}, true, false).CheckURL("http://127.0.0.1:8080"); err != nil {
		t.Errorf("an IP listed explicitly is allowed: %v", err)
	}
}

func TestEmbeddedPolicy(t *testing.T) {
	own := func(hp string) bool { return hp == "127.0.0.1:4001" }
	p := outbound.Embedded(own, nil, false)
	if err := p.CheckURL("http://127.0.0.1:4001/v2/parties"); err != nil {
		t.Errorf("own sandbox: %v", err)
	}
	for _, hp := range [][2]string{{"127.0.0.1", "6060"}, {"example.com", "443"}, {"169.254.169.254", "80"}} {
		if err := p.CheckHost(hp[0], hp[1]); err == nil {
			t.Errorf("CheckHost(%s:%s): allowed, want refused", hp[0], hp[1])
		}
	}
	if err := outbound.Embedded(own, []string{"rp.test"}, false).CheckHost("rp.test", "5002"); err != nil {
		t.Errorf("a configured host: %v", err)
	}
}

// TestDialRefusesResolvedLoopback: a name that passes CheckHost but
// resolves to loopback is refused when dialled; the request never leaves.
func TestDialRefusesResolvedLoopback(t *testing.T) {
	var hits int
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits++ }))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	p := &outbound.Policy{Hosts: []string{"localhost.test"}}
	// The test's own resolver: localhost.test -> 127.0.0.1.
	tr := p.Transport()
	c := &http.Client{Transport: tr, Timeout: 5 * time.Second}
	_, err := c.Get("http://127.0.0.1:" + port)
	if !errors.Is(err, outbound.ErrRefused) {
		t.Fatalf("direct loopback: got %v, want refused", err)
	}
	d := p.Dialer(time.Second)
	if _, err := d.DialContext(context.Background(), "tcp", "127.0.0.1:"+port); !errors.Is(err, outbound.ErrRefused) {
		t.Fatalf("dial after resolution: got %v, want refused", err)
	}
	if hits != 0 {
		t.Fatalf("the upstream was reached %d times", hits)
	}
}

// TestPolicyOf: a transport made by Policy.Transport tells its policy, so
// clients of other protocols dial through the same one; other transports
// tell none.
func TestPolicyOf(t *testing.T) {
	p := &outbound.Policy{Hosts: []string{"rp.test"}}
	tests := []struct {
		name string
		rt   http.RoundTripper
		want *outbound.Policy
	}{
		{"the policy's transport", p.Transport(), p},
		{"the default transport", http.DefaultTransport, nil},
		{"none", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := outbound.PolicyOf(tt.rt); got != tt.want {
				t.Fatalf("got %p, want %p", got, tt.want)
			}
		})
	}
}

// Package upstream reaches a validator's nodes for release 2.0 (JSON Ledger
// API, scan, validator app, participant admin API) through generated
// clients: a Resolver says where they answer, Clients adds the OAuth2 grant,
// the call timeout and the one place where call latency is observed.
package upstream

import (
	"cmp"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/validator-manager/validator-manager/gen/upstream/ledgerapi"
	"github.com/validator-manager/validator-manager/gen/upstream/scanapi"
	"github.com/validator-manager/validator-manager/gen/upstream/validatorapi"
	"github.com/validator-manager/validator-manager/impl/domain"
	"github.com/validator-manager/validator-manager/impl/outbound"
)

// Names of the upstreams, as errors and latency observations name them.
const (
	Ledger       = "ledger"
	Scan         = "scan"
	ValidatorApp = "validator-app"
)

// Target is where one validator's nodes answer and how to authenticate.
type Target struct {
	Validator string
	// LedgerURL is the JSON Ledger API's base URL (paths /v2/...).
	LedgerURL string
	// ScanURL is the scan service's base URL, before /api/scan.
	ScanURL string
	// ValidatorAppURL is the validator app's base URL, before /api/validator.
	ValidatorAppURL string
	// AdminAddress is host:port of the participant admin gRPC API.
	AdminAddress string
	// AdminTLS, when set, is the TLS configuration of the admin API; nil
	// is plaintext (the Helm charts' default inside a cluster).
	AdminTLS *tls.Config
	// MigrationID is the validator's synchronizer migration id (scan
	// snapshots are per migration).
	MigrationID int64
	// Credentials is nil when the nodes take no token.
	Credentials *Credentials
}

// Credentials are a client-credentials grant's parameters.
type Credentials struct {
	TokenURL     string
	ClientID     string
	ClientSecret string
	Audience     string
	Scope        string
}

// key identifies a grant in the token cache without keeping the secret in clear.
func (c Credentials) key() string {
	h := sha256.Sum256([]byte(c.TokenURL + "\x00" + c.ClientID + "\x00" + c.ClientSecret + "\x00" + c.Audience + "\x00" + c.Scope))
	return hex.EncodeToString(h[:])
}

// Resolver finds a validator's Target; domain.ErrNotFound for an unknown validator.
type Resolver interface {
	Resolve(ctx context.Context, validator string) (Target, error)
}

// Revisions tell when what a validator's Target is resolved from changes:
// the cluster gateway's caches (cluster.Kube).
type Revisions interface {
	// ValidatorRevision is the resourceVersion of the Validator resource in
	// the cache and that of its ledger API auth Secret ("" when there is
	// none); ok is false when the cache has no such Validator.
	ValidatorRevision(name string) (validator, secret string, ok bool)
}

// Instrument wraps the transport of one upstream to observe its calls
// (telemetry.Metrics.Transport).
type Instrument func(upstream string, next http.RoundTripper) http.RoundTripper

// Options configure Clients.
type Options struct {
	Resolver Resolver
	// Timeout bounds each call (config upstream.timeout), token fetch included.
	Timeout time.Duration
	// Transport is the base transport; nil means http.DefaultTransport.
	Transport http.RoundTripper
	// Instrument, when set, wraps each upstream's transport (the metrics hook).
	Instrument Instrument
	// Observe, when set, sees each admin API call's latency and outcome
	// (telemetry.Metrics.ObserveUpstream).
	Observe func(upstream, outcome string, d time.Duration)
	// Revisions, when set, let Clients keep a validator's clients while its
	// revision stays; without them the clients are built for each call.
	Revisions Revisions
}

// Clients hands out generated clients bound to a validator's nodes.
type Clients struct {
	opts Options
	// policy is the outbound address policy Transport applies (nil: none):
	// a call whose token endpoint it refuses is not made, secret and all.
	policy *outbound.Policy

	mu     sync.Mutex
	tokens map[string]oauth2.TokenSource
	admins map[adminKey]*AdminAPI

	// nodes are the validators' clients by name, with their revision.
	nodesMu sync.RWMutex
	nodes   map[string]builtNode
}

type builtNode struct {
	revision string
	node     *Node
}

// New returns Clients over o.
func New(o Options) *Clients {
	o.Transport = cmp.Or(o.Transport, http.DefaultTransport)
	if o.Timeout <= 0 {
		o.Timeout = 30 * time.Second
	}
	return &Clients{opts: o, policy: outbound.PolicyOf(o.Transport),
		tokens: map[string]oauth2.TokenSource{}, admins: map[adminKey]*AdminAPI{}, nodes: map[string]builtNode{}}
}

// Node is one validator's clients, shared by the calls made while its
// revision stays: read it, never change it.
type Node struct {
	Target    Target
	Ledger    *ledgerapi.ClientWithResponses
	Scan      *scanapi.ClientWithResponses
	Validator *validatorapi.ClientWithResponses
	// admin is the participant admin API, or why there is none.
	admin    *AdminAPI
	adminErr error
}

// Admin is the validator's participant admin API.
func (n *Node) Admin() (*AdminAPI, error) { return n.admin, n.adminErr }

// For returns clients for validator's nodes: those built before while its
// revision stays, new ones otherwise.
func (c *Clients) For(ctx context.Context, validator string) (*Node, error) {
	var rev string
	if c.opts.Revisions != nil {
		if v, s, ok := c.opts.Revisions.ValidatorRevision(validator); ok {
			rev = v + "/" + s
		}
	}
	if rev != "" {
		c.nodesMu.RLock()
		b, ok := c.nodes[validator]
		c.nodesMu.RUnlock()
		if ok && b.revision == rev {
			return b.node, nil
		}
	}
	t, err := c.opts.Resolver.Resolve(ctx, validator)
	if err != nil {
		if errors.Is(err, domain.ErrNotFound) {
			c.Forget(validator)
		}
		return nil, err
	}
	n, err := c.build(t)
	if err != nil {
		return nil, err
	}
	// Resolved after rev was read, n may be newer than rev says: the next
	// call then sees another revision and builds once more.
	c.nodesMu.Lock()
	if rev != "" {
		c.nodes[validator] = builtNode{revision: rev, node: n}
	} else {
		delete(c.nodes, validator)
	}
	c.nodesMu.Unlock()
	return n, nil
}

// Forget drops the clients kept for validator (its resource is gone).
func (c *Clients) Forget(validator string) {
	c.nodesMu.Lock()
	delete(c.nodes, validator)
	c.nodesMu.Unlock()
}

// build makes the clients of t's nodes.
func (c *Clients) build(t Target) (*Node, error) {
	var err error
	n := &Node{Target: t}
	creds := t.Credentials
	ledger, scan, app := c.httpClient(Ledger, creds), c.httpClient(Scan, creds), c.httpClient(ValidatorApp, creds)
	if n.Ledger, err = ledgerapi.NewClientWithResponses(t.LedgerURL, ledgerapi.WithHTTPClient(ledger)); err != nil {
		return nil, fmt.Errorf("ledger client: %w", err)
	}
	if n.Scan, err = scanapi.NewClientWithResponses(strings.TrimSuffix(t.ScanURL, "/")+"/api/scan", scanapi.WithHTTPClient(scan)); err != nil {
		return nil, fmt.Errorf("scan client: %w", err)
	}
	if n.Validator, err = validatorapi.NewClientWithResponses(strings.TrimSuffix(t.ValidatorAppURL, "/")+"/api/validator", validatorapi.WithHTTPClient(app)); err != nil {
		return nil, fmt.Errorf("validator app client: %w", err)
	}
	n.admin, n.adminErr = c.admin(t)
	return n, nil
}

// httpClient authenticates with creds' cached token and bounds each call by the timeout.
func (c *Clients) httpClient(up string, creds *Credentials) *http.Client {
	rt := c.opts.Transport
	if c.opts.Instrument != nil {
		rt = c.opts.Instrument(up, rt)
	}
	if creds != nil {
		if c.policy != nil {
			if err := c.policy.CheckURL(creds.TokenURL); err != nil {
				return &http.Client{Transport: refusing{err}}
			}
		}
		c.mu.Lock()
		ts := c.tokenSourceLocked(*creds)
		c.mu.Unlock()
		rt = &oauth2.Transport{Source: ts, Base: rt}
	}
	return &http.Client{Transport: bounded{base: rt, timeout: c.opts.Timeout}}
}

// refusing answers every call with the policy's refusal of the token
// endpoint, before any token is fetched.
type refusing struct{ err error }

func (r refusing) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		req.Body.Close()
	}
	return nil, r.err
}

// bounded gives each call, token fetch and body read included, the timeout:
// http.Client.Timeout would ask the oauth2 transport to cancel the deprecated way.
type bounded struct {
	base    http.RoundTripper
	timeout time.Duration
}

func (b bounded) RoundTrip(r *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithTimeout(r.Context(), b.timeout)
	resp, err := b.base.RoundTrip(r.WithContext(ctx))
	if err != nil {
		cancel()
		return nil, err
	}
	resp.Body = cancelOnClose{ReadCloser: resp.Body, cancel: cancel}
	return resp, nil
}

type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}

// tokenSourceLocked caches one token source per grant (c.mu held); it
// refreshes the token shortly before it expires.
func (c *Clients) tokenSourceLocked(creds Credentials) oauth2.TokenSource {
	k := creds.key()
	if ts, ok := c.tokens[k]; ok {
		return ts
	}
	cfg := clientcredentials.Config{ClientID: creds.ClientID, ClientSecret: creds.ClientSecret, TokenURL: creds.TokenURL}
	if creds.Scope != "" {
		cfg.Scopes = strings.Fields(creds.Scope)
	}
	if creds.Audience != "" {
		cfg.EndpointParams = url.Values{"audience": {creds.Audience}}
	}
	// The token fetch has the same bound as a call; it outlives any one request.
	ctx := context.WithValue(context.Background(), oauth2.HTTPClient, &http.Client{Transport: c.opts.Transport, Timeout: c.opts.Timeout})
	ts := cfg.TokenSource(ctx)
	c.tokens[k] = ts
	return ts
}

// Package sandbox is the embedded default's simulated Canton network: each
// validator's ledger, validator app and admin API, the network's scan and
// token endpoint, on loopback ports in the wire formats of openapi/upstream/,
// so that the server reaches them as it reaches real nodes.
package sandbox

import (
	"cmp"
	"context"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/validator-manager/validator-manager/impl/atomicfile"
	"github.com/validator-manager/validator-manager/impl/domain"
	"github.com/validator-manager/validator-manager/impl/upstream"
)

// ClientID is the client id of the server's grant at the sandbox token endpoint.
const ClientID = "validator-manager"

// Options configure a Network.
type Options struct {
	Logger *slog.Logger
	// Wrap, when set, wraps each simulated upstream's handler (tests check
	// the exchanges against the published descriptions).
	Wrap func(upstream string, h http.Handler) http.Handler
	// Fault sees each request first (tests inject failures): it may block,
	// and a status other than 0 is answered instead, as the upstream's error.
	Fault func(upstream string, r *http.Request) int
	// Secrets reads a validator's ledger API client secret: a validator with
	// one is called with its own client, others with the sandbox's grant.
	Secrets upstream.SecretReader
	// PageSize is the largest page the ledger answers (default 100), so that
	// callers exercise pagination.
	PageSize int
	// WriteFile writes the state (durable.go); atomicfile.Write when nil.
	WriteFile WriteFile
	// Passwords checks wallet users' passwords for the password grant of
	// Realm (realm.go); without it every password is refused.
	Passwords Passwords
	// Clients authenticates the realm's confidential clients for its
	// client-credentials grant (realm.go); without it every client is refused.
	Clients Clients
	// Redirects authorizes the authorization-code flow of the realm's UI
	// clients (authcode.go); without it every such client is refused.
	Redirects Redirects
	// Installation is written into the state: another installation's state
	// is refused, one written before installations were recorded adopted.
	Installation string
	// Expected says that the state file must exist (the database holds
	// validators, so their network was saved): a missing one is refused.
	Expected bool
}

// Network is the running sandbox.
type Network struct {
	dir  string
	opts Options // defaults filled in

	mu sync.Mutex
	st *state
	// signer is the token endpoint's key (state's TokenKey, parsed at open).
	signer *ecdsa.PrivateKey
	// clients are the validators' ledger API clients' secrets, by client id.
	clients map[string]string
	nodes   map[string]*node // running listeners by validator
	// servers are every listener, served by Start (serve.go).
	servers *servers

	scan *listener // scan and the token endpoint

	codes authCodes // the authorization codes issued
	// lookup resolves the discovery route's validators; nil until ServeDiscovery.
	lookup upstream.Resolver
	// started is when the network started (the participants' uptime).
	started time.Time
}

type node struct {
	ledger, app *listener
	admin       *grpcListener // the participant admin gRPC API
	// migrationID is the validator's as last resolved (the data snapshot reports it).
	migrationID int64
}

// Open loads the network's state from dir and opens the scan service's and
// token endpoint's listener, which Start serves.
func Open(dir string, o Options) (*Network, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	o.Logger = cmp.Or(o.Logger, slog.New(slog.DiscardHandler))
	if o.PageSize <= 0 {
		o.PageSize = 100
	}
	if o.WriteFile == nil {
		o.WriteFile = atomicfile.Write
	}
	n := &Network{dir: dir, opts: o, nodes: map[string]*node{}, servers: &servers{}, clients: map[string]string{}, codes: authCodes{m: map[string]grant{}}, started: time.Now()}
	st, err := loadState(n.statePath(), o)
	if err != nil {
		return nil, err
	}
	n.st = st
	// A new state, and one older than installations or the token key, is saved at once.
	if n.st.ClientSecret == "" || len(n.st.TokenKey) == 0 || o.Installation != "" && n.st.Installation != o.Installation {
		if n.st.ClientSecret == "" {
			n.st.ClientSecret = randomHex(32)
			n.st.SynchronizerID = "global-domain::" + fingerprint()
		}
		if len(n.st.TokenKey) == 0 {
			if n.st.TokenKey, err = newTokenKey(); err != nil {
				return nil, err
			}
		}
		n.st.Installation = o.Installation
		if err := n.saveLocked(); err != nil {
			return nil, err
		}
	}
	if n.signer, err = parseTokenKey(n.st.TokenKey); err != nil {
		return nil, err // checked at load
	}
	mux := http.NewServeMux()
	n.scanRoutes(mux)
	mux.HandleFunc("POST /oauth2/token", n.token)
	mux.HandleFunc("GET /.well-known/openid-configuration", n.discovery)
	mux.HandleFunc("GET /.well-known/jwks.json", n.jwks)
	mux.HandleFunc("POST /realms/{realm}/protocol/openid-connect/token", inRealm(n.realmToken))
	// The realm's JWKS: the token endpoint's one key.
	mux.HandleFunc("GET /realms/{realm}/protocol/openid-connect/certs", inRealm(n.jwks))
	mux.HandleFunc("GET /realms/{realm}/protocol/openid-connect/auth", inRealm(n.authorize))
	mux.HandleFunc("POST /realms/{realm}/protocol/openid-connect/auth", inRealm(n.authorize))
	mux.HandleFunc("GET /realms/{realm}/.well-known/openid-configuration", inRealm(n.realmDiscovery))
	mux.HandleFunc("GET "+DiscoveryPath+"{name}", n.discover)
	if n.scan, err = n.serve(upstream.Scan, mux); err != nil {
		return nil, err
	}
	if err := n.publish(); err != nil {
		n.servers.stop(closedContext())
		return nil, err
	}
	return n, nil
}

// Close closes every listener at once (Start stops them gracefully) and
// the network with them: no node starts after.
func (n *Network) Close() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.servers.stop(closedContext())
	n.nodes = map[string]*node{}
	n.unpublish()
}

func (n *Network) statePath() string { return filepath.Join(n.dir, "state.json") }

// serve opens a fresh loopback port for h, which Start serves.
func (n *Network) serve(up string, h http.Handler) (*listener, error) {
	ln, err := listen()
	if err != nil {
		return nil, err
	}
	l := &listener{url: "http://" + ln.Addr().String(), srv: &http.Server{Handler: n.observe(up, h), ReadHeaderTimeout: 10 * time.Second}, ln: ln}
	return l, n.servers.add(l)
}

// Resolver maps every validator the records know to its sandbox nodes,
// whatever addresses its configuration names (the network's scan included).
func (n *Network) Resolver(records upstream.Records) upstream.Resolver {
	return resolver{n: n, records: records}
}

type resolver struct {
	n       *Network
	records upstream.Records
}

func (r resolver) Resolve(ctx context.Context, name string) (upstream.Target, error) {
	v, err := r.records.GetValidator(ctx, name)
	if err != nil {
		return upstream.Target{}, err
	}
	t, err := r.n.Target(name)
	if err != nil {
		return t, err
	}
	t.MigrationID = int64(v.MigrationID)
	cfg, err := v.Config()
	if err != nil || cfg.Auth == nil {
		return t, nil // the sandbox's own grant
	}
	if err := r.n.configureUsers(name, cfg.Auth.LedgerAPIUser, cfg.Auth.WalletUser); err != nil {
		return upstream.Target{}, domain.Unavailable("%v", err)
	}
	if cfg.Auth.LedgerAPIClient == "" || r.n.opts.Secrets == nil {
		return t, nil
	}
	secret, err := r.n.opts.Secrets.LedgerAPIClientSecret(ctx, name)
	switch {
	case errors.Is(err, domain.ErrNotFound) || (err == nil && secret == ""):
		return t, nil
	case err != nil:
		return upstream.Target{}, err
	}
	creds := upstream.Credentials{TokenURL: t.Credentials.TokenURL, ClientID: cfg.Auth.LedgerAPIClient, ClientSecret: secret, Audience: cfg.Auth.Audience}
	if !v.CustomAuth && r.n.opts.Clients != nil {
		// The local identity provider's client gets its tokens from this
		// network's realm, whatever port the stored URLs name.
		creds.TokenURL = r.n.realmTokenURL()
	} else if err := r.n.registerClient(name, cfg.Auth.LedgerAPIClient, secret); err != nil {
		return upstream.Target{}, domain.Unavailable("%v", err)
	}
	t.Credentials = &creds
	return t, nil
}

// Target starts (once) and returns the nodes of validator name.
func (n *Network) Target(name string) (upstream.Target, error) {
	nd, err := n.node(name)
	if err != nil {
		return upstream.Target{}, err
	}
	return upstream.Target{
		Validator:       name,
		LedgerURL:       nd.ledger.url,
		ValidatorAppURL: nd.app.url,
		AdminAddress:    nd.admin.ln.Addr().String(),
		ScanURL:         n.scan.url,
		Credentials: &upstream.Credentials{
			TokenURL:     n.scan.url + "/oauth2/token",
			ClientID:     ClientID,
			ClientSecret: n.ClientSecret(),
		},
	}, nil
}

// ClientSecret is the secret of the server's grant.
func (n *Network) ClientSecret() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.st.ClientSecret
}

func (n *Network) node(name string) (*node, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if nd, ok := n.nodes[name]; ok {
		return nd, nil
	}
	if _, ok := n.st.Nodes[name]; !ok {
		n.st.Nodes[name] = newNodeState(name)
		if err := n.saveLocked(); err != nil {
			delete(n.st.Nodes, name) // not made, as a change that cannot be saved
			return nil, err
		}
	}
	lm := http.NewServeMux()
	n.ledgerRoutes(lm, name)
	am := http.NewServeMux()
	n.appRoutes(am, name)
	l, err := n.serve(upstream.Ledger, lm)
	if err != nil {
		return nil, err
	}
	a, err := n.serve(upstream.ValidatorApp, am)
	if err != nil {
		l.shutdown(closedContext())
		return nil, err
	}
	adm, err := n.serveAdmin(name)
	if err != nil {
		l.shutdown(closedContext())
		a.shutdown(closedContext())
		return nil, err
	}
	nd := &node{ledger: l, app: a, admin: adm}
	n.nodes[name] = nd
	return nd, nil
}

// saveLocked writes the state atomically, readable by the owner only.
func (n *Network) saveLocked() error {
	raw, err := json.MarshalIndent(n.st, "", " ")
	if err != nil {
		return err
	}
	return n.opts.WriteFile(n.statePath(), raw, 0o600)
}

// ErrRefused marks a state file refused at open (damaged, another
// installation's, missing where expected).
var ErrRefused = errors.New("sandbox state refused")

type refusal struct{ error }

func (refusal) Is(target error) bool { return target == ErrRefused }

const restoreOrAfresh = "restore it from a backup, or start the sandbox afresh with --start-afresh=sandbox (the file is set aside)"

func loadState(path string, o Options) (*state, error) {
	st := &state{}
	raw, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		if o.Expected {
			return nil, refusal{fmt.Errorf("sandbox state %s is missing, but the database holds validators whose network it kept; %s", path, restoreOrAfresh)}
		}
		st.makeMaps()
		return st, nil
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(raw, st); err != nil {
		return nil, refusal{fmt.Errorf("sandbox state %s: %w; %s", path, err, restoreOrAfresh)}
	}
	if o.Installation != "" && st.Installation != "" && st.Installation != o.Installation {
		return nil, refusal{fmt.Errorf("sandbox state %s belongs to installation %s, the database to %s: it is another installation's file; %s", path, st.Installation, o.Installation, restoreOrAfresh)}
	}
	st.makeMaps()
	if err := st.check(); err != nil {
		return nil, refusal{fmt.Errorf("sandbox state %s is damaged: %w; %s", path, err, restoreOrAfresh)}
	}
	migrateHosting(st)
	migrateSpent(st)
	return st, nil
}

// makeMaps gives the maps that the state file leaves out when empty a value
// of their own, so that writes need no check: after a load and after an undo.
func (st *state) makeMaps() {
	makeMap(&st.Nodes)
	makeMap(&st.Hosting)
	makeMap(&st.UsedMultiHashes)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// fingerprint is a fresh Canton namespace fingerprint: the multihash prefix
// 1220 (SHA-256) and 32 bytes in hex.
func fingerprint() string {
	h := sha256.Sum256([]byte(randomHex(32)))
	return "1220" + hex.EncodeToString(h[:])
}

// migrateSpent turns an earlier sandbox's network-wide spent multi-hashes
// into per-participant ones: spent on each participant that lists the party.
func migrateSpent(st *state) {
	for k, partyID := range st.UsedMultiHashes {
		if strings.Contains(k, "/") {
			continue
		}
		delete(st.UsedMultiHashes, k)
		raw, err := hex.DecodeString(k)
		if err != nil {
			continue
		}
		for v, ns := range st.Nodes {
			if ns.Parties[partyID] != nil {
				st.UsedMultiHashes[spentKey(ns.participantUID(v), raw)] = partyID
			}
		}
	}
}

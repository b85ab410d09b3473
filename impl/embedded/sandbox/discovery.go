package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/validator-manager/validator-manager/impl/atomicfile"
	"github.com/validator-manager/validator-manager/impl/domain"
	"github.com/validator-manager/validator-manager/impl/upstream"
)

// Ports are fresh and nodes start on first use, so a command on the same
// machine (recover) reads the network's address in networkFile, then asks
// DiscoveryPath, which starts a validator's nodes and answers their addresses.
const (
	networkFile = "network.json"
	// DiscoveryPath is the discovery route's prefix.
	DiscoveryPath = "/sandbox/v0/validators/"
)

// ErrNotRunning: no sandbox network runs in the directory.
var ErrNotRunning = errors.New("no sandbox network runs there")

// Endpoints are a validator's nodes and its wallet users' identity provider.
type Endpoints struct {
	Validator       string `json:"validator"`
	ValidatorAppURL string `json:"validatorAppUrl"`
	LedgerURL       string `json:"ledgerUrl"`
	// AuthURL and Realm are for impl/idp.TokenURL.
	AuthURL     string `json:"authUrl"`
	Realm       string `json:"realm"`
	MigrationID int64  `json:"migrationId"`
}

type networkAddress struct {
	URL string `json:"url"`
	PID int    `json:"pid"`
}

// ServeDiscovery makes the discovery route answer for the validators r
// resolves; until then it answers 503.
func (n *Network) ServeDiscovery(r upstream.Resolver) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.lookup = r
}

func (n *Network) discover(w http.ResponseWriter, r *http.Request) {
	n.mu.Lock()
	lookup := n.lookup
	n.mu.Unlock()
	if lookup == nil {
		spliceError(w, http.StatusServiceUnavailable, "the network does not resolve validators yet")
		return
	}
	name := r.PathValue("name")
	t, err := lookup.Resolve(r.Context(), name)
	switch {
	case errors.Is(err, domain.ErrNotFound):
		spliceError(w, http.StatusNotFound, fmt.Sprintf("no validator %q", name))
		return
	case err != nil:
		n.opts.Logger.Warn("sandbox: discovery", "validator", name, "error", err)
		spliceError(w, http.StatusServiceUnavailable, "the validator cannot be resolved now")
		return
	}
	n.mu.Lock()
	if nd := n.nodes[name]; nd != nil {
		nd.migrationID = t.MigrationID
	}
	n.mu.Unlock()
	writeJSON(w, http.StatusOK, Endpoints{Validator: name, ValidatorAppURL: t.ValidatorAppURL, LedgerURL: t.LedgerURL,
		AuthURL: n.scan.url, Realm: Realm, MigrationID: t.MigrationID})
}

func (n *Network) publish() error {
	raw, _ := json.Marshal(networkAddress{URL: n.scan.url, PID: os.Getpid()})
	if err := atomicfile.Write(filepath.Join(n.dir, networkFile), raw, 0o600); err != nil {
		return fmt.Errorf("sandbox: publish the network's address: %w", err)
	}
	return nil
}

// unpublish removes the address unless another network has written its own since.
func (n *Network) unpublish() {
	path := filepath.Join(n.dir, networkFile)
	var a networkAddress
	if raw, err := os.ReadFile(path); err == nil && json.Unmarshal(raw, &a) == nil && a.URL == n.scan.url {
		os.Remove(path)
	}
}

// Discover finds validator's Endpoints on the network that runs in dir,
// starting its nodes: ErrNotRunning when none answers there, a
// domain.ErrNotFound error when it has no such validator.
func Discover(ctx context.Context, dir, validator string) (Endpoints, error) {
	path := filepath.Join(dir, networkFile)
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Endpoints{}, fmt.Errorf("%w: %s does not exist", ErrNotRunning, path)
	}
	if err != nil {
		return Endpoints{}, err
	}
	var a networkAddress
	if err := json.Unmarshal(raw, &a); err != nil || a.URL == "" {
		return Endpoints{}, fmt.Errorf("%s is not a network address file", path)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.URL+DiscoveryPath+url.PathEscape(validator), nil)
	if err != nil {
		return Endpoints{}, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return Endpoints{}, fmt.Errorf("%w: %s names %s (process %d), which does not answer: %v", ErrNotRunning, path, a.URL, a.PID, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error string `json:"error"`
		}
		_ = json.Unmarshal(body, &e)
		if resp.StatusCode == http.StatusNotFound {
			return Endpoints{}, domain.NotFound("the embedded default has no validator %q", validator)
		}
		return Endpoints{}, fmt.Errorf("sandbox network %s answered %s: %s", a.URL, resp.Status, e.Error)
	}
	var e Endpoints
	if err := json.Unmarshal(body, &e); err != nil {
		return Endpoints{}, fmt.Errorf("sandbox network %s: %w", a.URL, err)
	}
	return e, nil
}

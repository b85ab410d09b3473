package app

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"

	"github.com/validator-manager/validator-manager/impl/config"
	"github.com/validator-manager/validator-manager/impl/embedded/sandbox"
	"github.com/validator-manager/validator-manager/impl/idp"
	"github.com/validator-manager/validator-manager/impl/upstream"
)

// openUpstreams builds the clients release 2.0 reaches validators' nodes
// with: on the embedded default the sandbox network's, whatever a validator names.
func (a *App) openUpstreams() (*upstream.Clients, error) {
	cfg := a.Config
	records := upstream.ResourceRecords{Resources: a.Cluster}
	var r upstream.Resolver
	if cfg.EmbeddedDefault() {
		// A validator that configures its own ledger API client is called with
		// it, and the sandbox checks that secret, as a participant would.
		so := sandbox.Options{Logger: a.Log, Secrets: a.Cluster, Installation: a.installation}
		// Wallet users get tokens at its realm with their local passwords.
		local, _ := a.Identity.(*idp.Local)
		if local != nil {
			so.Passwords = local
			// The clients it made for validators get tokens there too.
			so.Clients = local
			so.Redirects = local
		}
		apply(a, &so)
		err := a.openAfresh(config.StoreSandbox, a.sandboxFile(), sandbox.ErrRefused, func(expected bool) error {
			so.Expected = expected
			n, err := sandbox.Open(filepath.Dir(a.sandboxFile()), so)
			a.Sandbox = n
			return err
		})
		if err != nil {
			return nil, err
		}
		n := a.Sandbox
		if local != nil {
			// The realm the validators' apps are configured with.
			local.SetEndpoints(idp.RealmEndpoints(n.URL(), sandbox.Realm))
		}
		r = n.Resolver(records)
		n.ServeDiscovery(r)
	} else {
		adminTLS, err := adminTLS(cfg)
		if err != nil {
			return nil, err
		}
		r = upstream.ClusterResolver{Records: records, Secrets: a.Cluster, Namespace: cfg.Namespace, TokenURL: cfg.UpstreamTokenURL,
			AdminTLS: adminTLS, Release: a.releaseNamespace()}
	}
	a.Upstreams = upstream.New(upstream.Options{Resolver: r, Revisions: a.Cluster, Timeout: cfg.UpstreamTimeout, Instrument: a.Telemetry.Transport,
		Observe: a.Telemetry.ObserveUpstream, Transport: a.outboundPolicy().Transport()})
	a.Cluster.OnValidatorDeleted(a.Upstreams.Forget)
	return a.Upstreams, nil
}

// adminTLS is the admin APIs' TLS configuration (upstream.adminTls); nil: plaintext.
func adminTLS(cfg config.Config) (*tls.Config, error) {
	if !cfg.UpstreamAdminTLS {
		if cfg.UpstreamAdminCAFile != "" {
			return nil, fmt.Errorf("upstream.adminCaFile is set but upstream.adminTls is not: set both, or neither")
		}
		return nil, nil
	}
	c := &tls.Config{MinVersion: tls.VersionTLS12}
	if cfg.UpstreamAdminCAFile != "" {
		pem, err := os.ReadFile(cfg.UpstreamAdminCAFile)
		if err != nil {
			return nil, fmt.Errorf("upstream.adminCaFile: %w", err)
		}
		c.RootCAs = x509.NewCertPool()
		if !c.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("upstream.adminCaFile: %s holds no PEM certificate", cfg.UpstreamAdminCAFile)
		}
	}
	return c, nil
}

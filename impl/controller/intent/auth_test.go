package intent

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/validator-manager/validator-manager/impl/domain"
	"github.com/validator-manager/validator-manager/impl/keyring"
)

// createWith does what the create handler does for a validator of the
// given flags and request secrets, then reconciles it as the leader would.
func createWith(ctx context.Context, c *Controller, w *world, v domain.Validator, secrets domain.ValidatorSecrets) error {
	v.Claim, v.Phase = "claim-"+v.Name, domain.PhasePending
	if v.Spec == nil {
		v.Spec = []byte(`{"name":"` + v.Name + `"}`)
	}
	sealed, err := keyring.Seal(testKey, v.Name, v.Claim, secrets)
	if err != nil {
		return err
	}
	v.PendingSecrets = sealed
	w.mu.Lock()
	w.rows[v.Name] = v
	w.mu.Unlock()
	_, err = c.Reconcile(ctx, v.Name)
	return err
}

// appliedAuth is spec.config.auth of the validator as last applied.
func appliedAuth(t *testing.T, w *world, name string) *domain.Auth {
	t.Helper()
	w.mu.Lock()
	v := w.applied[name]
	w.mu.Unlock()
	cfg, err := v.Config()
	if err != nil {
		t.Fatal(err)
	}
	return cfg.Auth
}

func fullAuth(a *domain.Auth) bool {
	return a != nil && a.Audience != "" && a.NameServiceClient != "" && a.LedgerAPIClient != "" && a.LedgerAPIUser != "" &&
		a.WalletClient != "" && a.WalletUser != "" && a.JWKSURL != nil && *a.JWKSURL != "" &&
		a.OIDCAuthorityURL != nil && *a.OIDCAuthorityURL != "" && a.OIDCConfigURL != nil && *a.OIDCConfigURL != ""
}

func TestCreateProvisionsAuthAndSecrets(t *testing.T) {
	custom := []byte(`{"name":"c","customAuth":true,"auth":{"audience":"their-aud","cnsClientId":"cns","ledgerApiClientId":"lapi","ledgerApiUser":"u","walletClientId":"w","walletUser":"wu"}}`)
	tests := []struct {
		name         string
		v            domain.Validator
		secrets      domain.ValidatorSecrets
		wantPassword string // "generated": non-empty and not from the request
		wantClient   string
		wantAuth     func(*domain.Auth) bool
	}{
		{name: "README create: no customAuth, internal database, no password",
			v: domain.Validator{Name: "a"}, wantPassword: "generated", wantClient: "client-secret-a",
			wantAuth: func(a *domain.Auth) bool {
				return fullAuth(a) && a.WalletUser == "id-a" && a.LedgerAPIUser == "sa-a" && a.LedgerAPIClient == "a-validator-app" && a.Audience == "a-ledger-api"
			}},
		{name: "the request's password is kept; a request client secret is not the provider's",
			v: domain.Validator{Name: "b"}, secrets: domain.ValidatorSecrets{DatabasePassword: "theirs", LedgerAPIClientSecret: "ignored"},
			wantPassword: "theirs", wantClient: "client-secret-b", wantAuth: fullAuth},
		{name: "external database without a password gets an empty one",
			v: domain.Validator{Name: "e", ExternalDatabase: true}, wantPassword: "", wantClient: "client-secret-e", wantAuth: fullAuth},
		{name: "custom auth: the operator's auth and secret",
			v: domain.Validator{Name: "c", CustomAuth: true, Spec: custom}, secrets: domain.ValidatorSecrets{LedgerAPIClientSecret: "their-secret"},
			wantPassword: "generated", wantClient: "their-secret",
			wantAuth: func(a *domain.Auth) bool { return a != nil && a.Audience == "their-aud" && a.JWKSURL == nil }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld()
			c := run(t, w)
			if err := createWith(context.Background(), c, w, tt.v, tt.secrets); err != nil {
				t.Fatal(err)
			}
			if a := appliedAuth(t, w, tt.v.Name); !tt.wantAuth(a) {
				t.Fatalf("spec.config.auth: got %+v", a)
			}
			w.mu.Lock()
			defer w.mu.Unlock()
			got, present := w.secrets[tt.v.Name], w.present[tt.v.Name]
			if !present.Database || !present.LedgerAPIAuth {
				t.Fatalf("Secrets present: got %+v, want database and ledger API auth", present)
			}
			switch tt.wantPassword {
			case "generated":
				if len(got.DatabasePassword) < 40 {
					t.Fatalf("generated password: got %d characters, want a random one", len(got.DatabasePassword))
				}
			default:
				if got.DatabasePassword != tt.wantPassword {
					t.Fatalf("password: got %q, want %q", got.DatabasePassword, tt.wantPassword)
				}
			}
			if got.LedgerAPIClientSecret != tt.wantClient {
				t.Fatalf("client secret: got %q, want %q", got.LedgerAPIClientSecret, tt.wantClient)
			}
			row := w.rows[tt.v.Name]
			if tt.v.CustomAuth != (row.ProvisionedAuth == nil) {
				t.Fatalf("recorded auth: got %+v (custom auth %v)", row.ProvisionedAuth, tt.v.CustomAuth)
			}
		})
	}
}

// A client of the name someone else made is a conflict shown in the row;
// the other's client is left alone.
func TestCreateOfForeignClientsIsShown(t *testing.T) {
	w := newWorld()
	w.clients["omega"] = "someone else's"
	c := run(t, w)
	if err := createWith(context.Background(), c, w, domain.Validator{Name: "omega"}, domain.ValidatorSecrets{}); !errors.Is(err, domain.ErrInvalid) {
		t.Fatalf("got %v, want invalid", err)
	}
	if w.clients["omega"] != "someone else's" {
		t.Fatal("the other's clients were removed")
	}
	if msg := w.row("omega").ProvisionError; !strings.Contains(msg, "client") {
		t.Fatalf("provision error: got %q, want the client named", msg)
	}
}

// A validator recorded before provisioning (or whose process died after
// the clients were made and before they were recorded) heals on reconcile:
// clients adopted and recorded once, Secrets written once, never replaced,
// and restored when deleted.
func TestReconcileHealsAndNeverReplaces(t *testing.T) {
	w := newWorld()
	w.rows["old"] = domain.Validator{Name: "old", Claim: "c-old", WalletUserID: "id-old", Spec: []byte(`{"name":"old"}`)}
	w.clients["old"] = "c-old" // made by a process that died before recording them
	w.failNext["SetProvisionedAuth"] = errors.New("crash")
	c := run(t, w)
	eventually(t, func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.rows["old"].ProvisionedAuth != nil && w.present["old"].Database && w.present["old"].LedgerAPIAuth
	})
	if a := appliedAuth(t, w, "old"); !fullAuth(a) || a.WalletUser != "id-old" {
		t.Fatalf("spec.config.auth: got %+v", a)
	}
	first := w.secrets["old"]

	if _, err := c.Reconcile(context.Background(), "old"); err != nil {
		t.Fatal(err)
	}
	if got := w.secrets["old"]; got != first {
		t.Fatal("a reconcile replaced an existing Secret's value")
	}

	// The database Secret deleted by hand comes back with the password the
	// database was initialised with.
	w.mu.Lock()
	p := w.present["old"]
	p.Database = false
	w.present["old"] = p
	gone := w.secrets["old"]
	gone.DatabasePassword = ""
	w.secrets["old"] = gone
	w.mu.Unlock()
	if _, err := c.Reconcile(context.Background(), "old"); err != nil {
		t.Fatal(err)
	}
	w.mu.Lock()
	restored := w.present["old"].Database
	password := w.secrets["old"].DatabasePassword
	w.mu.Unlock()
	if !restored || password != first.DatabasePassword {
		t.Fatalf("the deleted database Secret: restored %t, same password %t; want it restored with the same password", restored, password == first.DatabasePassword)
	}

	// A password the operator gave is nowhere else: none is made up.
	w.mu.Lock()
	row := w.rows["old"]
	row.Spec = []byte(`{"name":"old","writtenSecrets":{"database":true}}`)
	w.rows["old"] = row
	p = w.present["old"]
	p.Database = false
	w.present["old"] = p
	w.mu.Unlock()
	if _, err := c.Reconcile(context.Background(), "old"); err != nil {
		t.Fatal(err)
	}
	w.mu.Lock()
	if w.present["old"].Database {
		w.mu.Unlock()
		t.Fatal("an operator's database password was replaced by a made-up one")
	}
	// Nor for an external database: not even an empty one.
	row = w.rows["old"]
	row.ExternalDatabase = true
	w.rows["old"] = row
	w.mu.Unlock()
	if _, err := c.Reconcile(context.Background(), "old"); err != nil {
		t.Fatal(err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.present["old"].Database {
		t.Fatal("an operator's external database password was replaced by an empty one")
	}
}

// TestNewUIAddressesReachTheClients: clients recorded with other UI
// addresses than the identity provider gives now (made before the UIs had
// any, or before ui.publicUrl changed) are provisioned again, which gives
// the existing clients the new redirect URIs, and the row records them: a
// later reconcile asks nothing more.
func TestNewUIAddressesReachTheClients(t *testing.T) {
	w := newWorld()
	w.rows["old"] = domain.Validator{Name: "old", Claim: "c-old", WalletUserID: "id-old", Spec: []byte(`{"name":"old"}`),
		ProvisionedAuth: &domain.ProvisionedAuth{Audience: "old-ledger-api", LedgerAPIClient: "old-validator-app", LedgerAPIUser: "sa-old",
			WalletClient: "old-wallet-ui", NameServiceClient: "old-ans-ui"}}
	w.clients["old"] = "c-old"
	c := run(t, w)
	calls := func() int { w.mu.Lock(); defer w.mu.Unlock(); return w.provisions }
	reconcile := func() {
		t.Helper()
		if _, err := c.Reconcile(context.Background(), "old"); err != nil {
			t.Fatal(err)
		}
	}
	reconcile()
	if n := calls(); n != 0 {
		t.Fatalf("clients recorded with the UI addresses of now: provisioned %d times, want 0", n)
	}

	w.mu.Lock()
	w.uiDomain = "ui.test"
	w.mu.Unlock()
	reconcile()
	if n := calls(); n != 1 {
		t.Fatalf("UI addresses changed: provisioned %d times, want 1", n)
	}
	if p := w.row("old").ProvisionedAuth; p == nil || p.WalletURL != "https://wallet.old.ui.test" || p.NameServiceURL != "https://ans.old.ui.test" {
		t.Fatalf("recorded: got %+v, want the new UI addresses", p)
	}
	reconcile()
	if n := calls(); n != 1 {
		t.Fatalf("after the new addresses were recorded: provisioned %d times, want 1", n)
	}
}

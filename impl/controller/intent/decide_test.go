package intent

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/validator-manager/validator-manager/impl/apis/v1alpha1"
	"github.com/validator-manager/validator-manager/impl/domain"
	"github.com/validator-manager/validator-manager/impl/keyring"
)

var complete = &domain.ProvisionedAuth{Audience: "a-ledger-api", LedgerAPIClient: "a-validator-app", LedgerAPIUser: "sa-a",
	WalletClient: "a-wallet-ui", NameServiceClient: "a-ans-ui"}

func TestDecideIdentity(t *testing.T) {
	password := keyring.TemporaryPassword(testKey, "a", "claim-a")
	for _, tc := range []struct {
		name string
		v    domain.Validator
		want identityWork
	}{
		{"custom authentication: nothing", domain.Validator{Name: "a", Claim: "claim-a", CustomAuth: true}, identityWork{}},
		{"new: the user with the create's password, and the clients", domain.Validator{Name: "a", Claim: "claim-a"},
			identityWork{Provider: true, WalletUser: true, Password: password, Clients: true}},
		{"user recorded: the clients", domain.Validator{Name: "a", Claim: "claim-a", WalletUserID: "id-a"},
			identityWork{Provider: true, Clients: true}},
		{"clients recorded in part: healed", domain.Validator{Name: "a", Claim: "claim-a", WalletUserID: "id-a",
			ProvisionedAuth: &domain.ProvisionedAuth{Audience: "a-ledger-api"}}, identityWork{Provider: true, Clients: true}},
		{"all recorded: nothing to make, the outcome still recorded", domain.Validator{Name: "a", Claim: "claim-a", WalletUserID: "id-a",
			ProvisionedAuth: complete}, identityWork{Provider: true}},
		{"all recorded with the UIs of now: nothing to make", domain.Validator{Name: "a", Claim: "claim-a", WalletUserID: "id-a",
			ProvisionedAuth: withUIs(*complete, "https://wallet.a.ui.test", "https://ans.a.ui.test")}, identityWork{Provider: true}},
		{"recorded with other UIs: the clients again", domain.Validator{Name: "a", Claim: "claim-a", WalletUserID: "id-a",
			ProvisionedAuth: withUIs(*complete, "https://wallet.a.old.test", "https://ans.a.ui.test")}, identityWork{Provider: true, Clients: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			uis := &world{}
			if tc.v.ProvisionedAuth != nil && tc.v.ProvisionedAuth.WalletURL != "" {
				uis.uiDomain = "ui.test"
			}
			if got := decideIdentity(tc.v, testKey, identity{uis}); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func withUIs(p domain.ProvisionedAuth, wallet, ans string) *domain.ProvisionedAuth {
	p.WalletURL, p.NameServiceURL = wallet, ans
	return &p
}

func TestDesiredResource(t *testing.T) {
	e := identity{}.Endpoints()
	for _, tc := range []struct {
		name string
		v    domain.Validator
		want *domain.Auth // nil: the spec as the row has it
	}{
		{"custom authentication: the operator's", domain.Validator{Name: "a", CustomAuth: true, ProvisionedAuth: complete,
			Spec: []byte(`{"name":"a"}`)}, nil},
		{"not provisioned yet", domain.Validator{Name: "a", Spec: []byte(`{"name":"a"}`)}, nil},
		{"provisioned: the provider's clients, user and endpoints", domain.Validator{Name: "a", WalletUserID: "id-a",
			ProvisionedAuth: complete, Spec: []byte(`{"name":"a"}`)},
			&domain.Auth{Audience: "a-ledger-api", NameServiceClient: "a-ans-ui", LedgerAPIClient: "a-validator-app", LedgerAPIUser: "sa-a",
				WalletClient: "a-wallet-ui", WalletUser: "id-a", JWKSURL: &e.JWKS, OIDCAuthorityURL: &e.Authority, OIDCConfigURL: &e.Config}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := desiredResource(tc.v, e)
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == nil {
				if string(got.Spec) != string(tc.v.Spec) {
					t.Fatalf("spec: got %s, want the row's %s", got.Spec, tc.v.Spec)
				}
				return
			}
			cfg, err := got.Config()
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(cfg.Auth, tc.want) {
				t.Errorf("auth: got %+v, want %+v", cfg.Auth, tc.want)
			}
			if cfg.Name != "a" {
				t.Errorf("the rest of the configuration was lost: %+v", cfg)
			}
		})
	}
}

func TestDecideSecrets(t *testing.T) {
	seal := func(name, claim string, s domain.ValidatorSecrets) string {
		t.Helper()
		sealed, err := keyring.Seal(testKey, name, claim, s)
		if err != nil {
			t.Fatal(err)
		}
		return sealed
	}
	generated := keyring.DatabasePassword(testKey, "a", "claim-a")
	empty := ""
	all := domain.WrittenSecrets{Onboarding: true, LedgerAPIAuth: true, Database: true}
	for _, tc := range []struct {
		name string
		v    domain.Validator
		have domain.WrittenSecrets
		want secretWork
	}{
		{"in step: nothing", domain.Validator{Name: "a", Claim: "claim-a", ProvisionedAuth: complete}, all, secretWork{}},
		{"new, no password given: one generated, the provider's client secret",
			domain.Validator{Name: "a", Claim: "claim-a", ProvisionedAuth: complete,
				PendingSecrets: seal("a", "claim-a", domain.ValidatorSecrets{OnboardingSecret: "s3cret"})}, domain.WrittenSecrets{},
			secretWork{Given: domain.ValidatorSecrets{OnboardingSecret: "s3cret"}, Defaults: domain.SecretDefaults{DatabasePassword: &generated},
				ClientSecret: true, Clear: true}},
		{"the request's password; its client secret is not the provider's",
			domain.Validator{Name: "a", Claim: "claim-a", ProvisionedAuth: complete,
				PendingSecrets: seal("a", "claim-a", domain.ValidatorSecrets{DatabasePassword: "theirs", LedgerAPIClientSecret: "ignored"})}, domain.WrittenSecrets{},
			secretWork{Given: domain.ValidatorSecrets{DatabasePassword: "theirs"}, ClientSecret: true, Clear: true}},
		{"custom authentication: the request's client secret, no provider",
			domain.Validator{Name: "a", Claim: "claim-a", CustomAuth: true,
				PendingSecrets: seal("a", "claim-a", domain.ValidatorSecrets{LedgerAPIClientSecret: "their-secret"})}, domain.WrittenSecrets{},
			secretWork{Given: domain.ValidatorSecrets{LedgerAPIClientSecret: "their-secret"}, Defaults: domain.SecretDefaults{DatabasePassword: &generated}, Clear: true}},
		{"external database without a password: an empty one",
			domain.Validator{Name: "a", Claim: "claim-a", ExternalDatabase: true, ProvisionedAuth: complete}, domain.WrittenSecrets{LedgerAPIAuth: true},
			secretWork{Defaults: domain.SecretDefaults{DatabasePassword: &empty}}},
		{"deleted database Secret: the same generated password again",
			domain.Validator{Name: "a", Claim: "claim-a", CustomAuth: true, Spec: []byte(`{"name":"a"}`)}, domain.WrittenSecrets{LedgerAPIAuth: true},
			secretWork{Defaults: domain.SecretDefaults{DatabasePassword: &generated}}},
		{"deleted database Secret of the operator's password: none made up",
			domain.Validator{Name: "a", Claim: "claim-a", CustomAuth: true, Spec: []byte(`{"name":"a","writtenSecrets":{"database":true}}`)},
			domain.WrittenSecrets{LedgerAPIAuth: true}, secretWork{OperatorPassword: true}},
		{"nor for an external database",
			domain.Validator{Name: "a", Claim: "claim-a", CustomAuth: true, ExternalDatabase: true, Spec: []byte(`{"name":"a","writtenSecrets":{"database":true}}`)},
			domain.WrittenSecrets{LedgerAPIAuth: true}, secretWork{OperatorPassword: true}},
		{"not provisioned yet: no client secret to read",
			domain.Validator{Name: "a", Claim: "claim-a"}, domain.WrittenSecrets{Database: true}, secretWork{}},
		{"values sealed under another key: dropped, cleared",
			domain.Validator{Name: "a", Claim: "claim-a", CustomAuth: true,
				PendingSecrets: seal("a", "another claim", domain.ValidatorSecrets{OnboardingSecret: "s3cret"})}, all,
			secretWork{Unsealable: true, Clear: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := decideSecrets(tc.v, testKey, tc.have)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %s, want %s", describe(got), describe(tc.want))
			}
			if got.writes() != (tc.want.Given != domain.ValidatorSecrets{} || tc.want.Defaults != domain.SecretDefaults{} || tc.want.ClientSecret) {
				t.Errorf("writes: got %v", got.writes())
			}
		})
	}
}

// TestSecretWorkSecrets: the Secrets a new resource references from its
// first generation are the ones the reconcile writes next, the ledger API
// client's included when its secret is yet to be read.
func TestSecretWorkSecrets(t *testing.T) {
	password := "p"
	for _, tc := range []struct {
		name string
		w    secretWork
		want domain.WrittenSecrets
	}{
		{"nothing", secretWork{Clear: true, Unsealable: true}, domain.WrittenSecrets{}},
		{"given", secretWork{Given: domain.ValidatorSecrets{OnboardingSecret: "s", DatabasePassword: "d"}},
			domain.WrittenSecrets{Onboarding: true, Database: true}},
		{"defaults", secretWork{Defaults: domain.SecretDefaults{DatabasePassword: &password, LedgerAPIClientSecret: &password}},
			domain.WrittenSecrets{LedgerAPIAuth: true, Database: true}},
		{"the client secret to read", secretWork{ClientSecret: true}, domain.WrittenSecrets{LedgerAPIAuth: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.w.secrets(); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
			if got, want := tc.w.writes(), tc.want != (domain.WrittenSecrets{}); got != want {
				t.Errorf("writes: got %v, want %v", got, want)
			}
		})
	}
}

// describe shows w with its defaults' values (pointers print as addresses).
func describe(w secretWork) string {
	value := func(p *string) string {
		if p == nil {
			return "<none>"
		}
		return strconv.Quote(*p)
	}
	return fmt.Sprintf("%+v (database default %s, client default %s)", w, value(w.Defaults.DatabasePassword), value(w.Defaults.LedgerAPIClientSecret))
}

func TestStateToCopy(t *testing.T) {
	row := domain.Validator{Name: "a", Phase: domain.PhasePending}
	for _, tc := range []struct {
		name   string
		st     domain.ValidatorState
		cached bool
		want   bool
	}{
		{"not in the cache", domain.ValidatorState{Phase: domain.PhaseRunning}, false, false},
		{"same phase", domain.ValidatorState{Phase: domain.PhasePending, DatabaseRunning: true}, true, false},
		{"phase moved", domain.ValidatorState{Phase: domain.PhaseRunning}, true, true},
		{"frozen by the operator", domain.ValidatorState{Phase: domain.PhasePending, DisableUserEdit: true}, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, ok := stateToCopy(row, tc.st, tc.cached)
			if ok != tc.want || (ok && st != tc.st) {
				t.Errorf("got %+v, %v; want %v", st, ok, tc.want)
			}
		})
	}
}

// TestDecideProvisioned: which Provisioned condition each recorded failure
// shows, and when a shown one clears.
func TestDecideProvisioned(t *testing.T) {
	shown := func(status metav1.ConditionStatus, reason string) *metav1.Condition {
		return &metav1.Condition{Type: v1alpha1.ConditionProvisioned, Status: status, Reason: reason, Message: "m"}
	}
	idp := func(reason string) error {
		return &provisionFailure{Reason: reason, err: fmt.Errorf("wrapped: %w", domain.Conflict("user exists"))}
	}
	for _, tc := range []struct {
		name     string
		identity error
		secrets  secretWork
		shown    *metav1.Condition
		// want is the condition's status and reason; "" none is written.
		want       metav1.ConditionStatus
		wantReason string
	}{
		{name: "never failed", want: ""},
		{name: "wallet user of the name made elsewhere", identity: idp(ReasonWalletUserConflict), want: metav1.ConditionFalse, wantReason: ReasonWalletUserConflict},
		{name: "client made elsewhere", identity: idp(ReasonClientConflict), want: metav1.ConditionFalse, wantReason: ReasonClientConflict},
		{name: "identity provider down", identity: idp(ReasonIdentityProviderUnavailable), want: metav1.ConditionFalse, wantReason: ReasonIdentityProviderUnavailable},
		{name: "identity provider's failure first", identity: idp(ReasonIdentityProviderUnavailable), secrets: secretWork{Unsealable: true},
			want: metav1.ConditionFalse, wantReason: ReasonIdentityProviderUnavailable},
		{name: "the database's error is not shown", identity: errors.New("database is locked"), shown: shown(metav1.ConditionFalse, ReasonWalletUserConflict), want: ""},
		{name: "values that no longer open", secrets: secretWork{Unsealable: true}, want: metav1.ConditionFalse, wantReason: ReasonSecretsUnsealable},
		{name: "operator's database password gone", secrets: secretWork{OperatorPassword: true}, want: metav1.ConditionFalse, wantReason: ReasonDatabasePasswordMissing},
		{name: "failure over", shown: shown(metav1.ConditionFalse, ReasonIdentityProviderUnavailable), want: metav1.ConditionTrue, wantReason: ReasonProvisioned},
		{name: "already cleared", shown: shown(metav1.ConditionTrue, ReasonProvisioned), want: ""},
		{name: "dropped values stay shown", shown: shown(metav1.ConditionFalse, ReasonSecretsUnsealable), want: ""},
		{name: "dropped values given again", shown: shown(metav1.ConditionFalse, ReasonSecretsUnsealable),
			secrets: secretWork{Given: domain.ValidatorSecrets{OnboardingSecret: "s3cret"}}, want: metav1.ConditionTrue, wantReason: ReasonProvisioned},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := decideProvisioned(tc.identity, tc.secrets, tc.shown)
			if tc.want == "" {
				if got != nil {
					t.Fatalf("got %+v, want none written", got)
				}
				return
			}
			if got == nil || got.Type != v1alpha1.ConditionProvisioned || got.Status != tc.want || got.Reason != tc.wantReason || got.Message == "" {
				t.Fatalf("got %+v, want %s %s with a message", got, tc.want, tc.wantReason)
			}
			if strings.Contains(got.Message, "s3cret") {
				t.Fatalf("message %q holds a secret value", got.Message)
			}
		})
	}
}

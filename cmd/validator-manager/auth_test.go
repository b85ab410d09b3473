package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwk"
	"github.com/lestrrat-go/jwx/v2/jwt"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/validator-manager/validator-manager/gen/managementapi"
	"github.com/validator-manager/validator-manager/impl/apis/v1alpha1"
)

// checkAuth: the README's validator (no customAuth, no databaseConfig),
// created with the README's body, reaches RUNNING with workloads as
// Splice's charts require them (checkSpliceWorkloads), and gets its auth
// from the local identity provider: every setting non-empty, the wallet
// user the created user's id, both Secrets written, and the validator app's
// credentials obtain a token at the token URL its configuration names,
// whose subject is its ledger API user and whose audience its own. Its
// database Secret deleted by hand makes it leave RUNNING, naming the
// Secret, until it is written again.
func checkAuth(t *testing.T, base, token, dataDir string) {
	ctx := context.Background()
	const name = "validator-1"
	body := readmePayload(t)
	var payload struct{ ImageRepo, ImageTag string }
	if err := json.Unmarshal(body, &payload); err != nil {
		t.Fatal(err)
	}
	rc := adminConfig(t, dataDir)
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	stopWatch := watchPhases(t, dyn, name)
	created := createRaw(t, base, token, body)
	core, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	c := testClient(t, base, token)
	// Started as the status of the resource's last generation says, with
	// spec.secrets referencing its Secrets.
	eventually(t, 120*time.Second, "the README's validator RUNNING (or COMPLETED: every workload available) at its last generation", func() bool {
		r, err := c.ListValidatorsWithResponse(ctx, &managementapi.ListValidatorsParams{Name: ptr(name)})
		if err != nil || r.JSON200 == nil || len(r.JSON200.Validators) != 1 || r.JSON200.Validators[0].Phase == nil ||
			!started(v1alpha1.Phase(*r.JSON200.Validators[0].Phase)) {
			return false
		}
		v := getValidator(t, dyn, name)
		s := v.Spec.Secrets
		return started(v.Status.Phase) && v.Status.ObservedGeneration == v.Generation && s != nil && s.Database != nil && s.LedgerAPIAuth != nil
	})
	v := getValidator(t, dyn, name)
	a := v.Spec.Config.Auth
	if a == nil || a.Audience == "" || a.NameServiceClient == "" || a.LedgerAPIClient == "" || a.LedgerAPIUser == "" || a.WalletClient == "" ||
		a.WalletUser == "" || a.JWKSURL == nil || a.OIDCAuthorityURL == nil || a.OIDCConfigURL == nil {
		t.Fatalf("spec.config.auth: got %+v, want every setting", a)
	}
	checkSpliceWorkloads(t, core, name, payload.ImageRepo, payload.ImageTag, a.WalletUser)
	if s := v.Spec.Secrets; s == nil || s.Database == nil || s.LedgerAPIAuth == nil {
		t.Fatalf("spec.secrets: got %+v, want database and ledgerApiAuth", s)
	}
	secretValue := func(name, key string) string {
		s, err := core.CoreV1().Secrets("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return ""
		}
		return string(s.Data[key])
	}
	clientSecret := secretValue("validator-1-ledger-api-auth", "client-secret")
	password := secretValue("validator-1-database", "password")
	if clientSecret == "" || len(password) < 40 {
		t.Fatalf("Secrets: client secret %d characters, password %d; want both, the password generated", len(clientSecret), len(password))
	}

	// The token endpoint the OIDC configuration names, as the validator app finds it.
	var discovery struct {
		Issuer        string `json:"issuer"`
		TokenEndpoint string `json:"token_endpoint"`
		JWKSURI       string `json:"jwks_uri"`
	}
	getJSON(t, *a.OIDCConfigURL, &discovery)
	if discovery.Issuer != *a.OIDCAuthorityURL || discovery.JWKSURI != *a.JWKSURL {
		t.Fatalf("OIDC configuration %+v does not match the auth %+v", discovery, a)
	}
	form := url.Values{"grant_type": {"client_credentials"}, "client_id": {a.LedgerAPIClient}, "client_secret": {clientSecret}}
	resp, err := http.PostForm(discovery.TokenEndpoint, form)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&tok); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("client-credentials grant: got %d, %v", resp.StatusCode, err)
	}
	keys, err := jwk.Fetch(ctx, *a.JWKSURL)
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := jwt.Parse([]byte(tok.AccessToken), jwt.WithKeySet(keys), jwt.WithIssuer(*a.OIDCAuthorityURL), jwt.WithValidate(true))
	if err != nil {
		t.Fatalf("the token does not verify against the JWKS: %v", err)
	}
	if parsed.Subject() != a.LedgerAPIUser || !slices.Contains(parsed.Audience(), a.Audience) {
		t.Fatalf("token: sub %q aud %v; want %q and %q", parsed.Subject(), parsed.Audience(), a.LedgerAPIUser, a.Audience)
	}
	form.Set("client_secret", "wrong")
	if resp, err := http.PostForm(discovery.TokenEndpoint, form); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a wrong secret: got %v %v, want 401", statusCode(resp), err)
	}
	// The wallet user logs in with the temporary password the create
	// answered, through the wallet UI's client; its tokens' subject is the
	// walletUser the validator app was given (the created user's id).
	login := url.Values{"grant_type": {"password"}, "client_id": {a.WalletClient},
		"username": {created.Username}, "password": {created.TemporaryPassword}}
	resp, err = http.PostForm(discovery.TokenEndpoint, login)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	tok.AccessToken = ""
	if err := json.NewDecoder(resp.Body).Decode(&tok); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("the wallet user's password grant: got %d, %v", resp.StatusCode, err)
	}
	user, err := jwt.Parse([]byte(tok.AccessToken), jwt.WithKeySet(keys), jwt.WithIssuer(*a.OIDCAuthorityURL), jwt.WithValidate(true))
	if err != nil || user.Subject() != a.WalletUser {
		t.Fatalf("the wallet user's token: %v, sub %v; want sub %q", err, user, a.WalletUser)
	}

	// Its workloads rolled out once: started, it stayed so.
	stopWatch()
	checkRolledOutOnce(t, core, name)
	// Deleted by hand: reported, then written again (with a new password).
	checkSecretLossReported(t, core, dyn, name)
}

func getJSON(t *testing.T, u string, v any) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("GET %s: %d %s", u, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatal(err)
	}
}

func statusCode(r *http.Response) int {
	if r == nil {
		return 0
	}
	r.Body.Close()
	return r.StatusCode
}

// testClient calls release 1.11 at base with token (recover's client).
func testClient(t *testing.T, base, token string) *managementapi.ClientWithResponses {
	t.Helper()
	c, err := managementClient(base, token)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

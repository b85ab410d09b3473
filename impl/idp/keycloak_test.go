package idp

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/validator-manager/validator-manager/impl/domain"
)

// strong reports what a typical password policy would reject in p, or "".
func strong(p string) string {
	var upper, lower, digit, special bool
	for _, r := range p {
		switch {
		case r >= 'A' && r <= 'Z':
			upper = true
		case r >= 'a' && r <= 'z':
			lower = true
		case r >= '0' && r <= '9':
			digit = true
		default:
			special = true
		}
	}
	switch {
	case len(p) < 20:
		return "shorter than 20"
	case !upper:
		return "no upper case letter"
	case !lower:
		return "no lower case letter"
	case !digit:
		return "no digit"
	case !special:
		return "no special character"
	}
	return ""
}

// sentPassword is the credential value of the last create request the fake received.
func (f *fakeKeycloak) sentPassword(t *testing.T) string {
	t.Helper()
	creates := f.callsTo(http.MethodPost, "/users")
	if len(creates) == 0 {
		t.Fatal("no create request reached the fake")
	}
	var rep userRep
	if err := jsonUnmarshal(creates[len(creates)-1].Body, &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Credentials) != 1 {
		t.Fatalf("got %d credentials, want 1", len(rep.Credentials))
	}
	return rep.Credentials[0].Value
}

func TestKeycloakCreateWalletUser(t *testing.T) {
	tests := []struct {
		name       string
		validator  string
		noLocation bool
		want       string
	}{
		{name: "id from Location", validator: "val1", want: "val1_walletuser"},
		{name: "name lower-cased like Keycloak stores it", validator: "Val2", want: "val2_walletuser"},
		{name: "no Location header: looked up by exact username", validator: "val3", noLocation: true, want: "val3_walletuser"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeKeycloak(t)
			f.noLocation = tt.noLocation
			k := f.adapter(t)

			got, err := k.CreateWalletUser(context.Background(), tt.validator, "", testPassword(tt.validator))
			if err != nil {
				t.Fatalf("got error %v, want none", err)
			}
			if got.Username != tt.want {
				t.Errorf("got username %q, want %q", got.Username, tt.want)
			}
			stored, ok := f.user(got.ID)
			if !ok {
				t.Fatalf("got id %q, want the id Keycloak assigned", got.ID)
			}
			if stored.Username != tt.want {
				t.Errorf("got stored username %q, want %q", stored.Username, tt.want)
			}
			if !stored.Enabled {
				t.Error("got enabled false, want true")
			}
			if !slices.Contains(stored.RequiredActions, "UPDATE_PASSWORD") {
				t.Errorf("got required actions %v, want UPDATE_PASSWORD", stored.RequiredActions)
			}
			if !stored.Temporary {
				t.Error("got a permanent credential, want temporary: true")
			}
			if stored.Password != got.TemporaryPassword {
				t.Error("got a returned password different from the one set in Keycloak")
			}
			if why := strong(got.TemporaryPassword); why != "" {
				t.Errorf("got a weak password: %s", why)
			}
			if n := len(f.callsTo(http.MethodPost, "/users")); n != 1 {
				t.Errorf("got %d create requests, want 1", n)
			}
			wantLookups := 0
			if tt.noLocation {
				wantLookups = 1
			}
			lookups := f.callsTo(http.MethodGet, "/users")
			if len(lookups) != wantLookups {
				t.Fatalf("got %d user lookups, want %d", len(lookups), wantLookups)
			}
			if wantLookups == 1 {
				q, _ := url.ParseQuery(lookups[0].Query)
				if q.Get("username") != tt.want || q.Get("exact") != "true" {
					t.Errorf("got lookup query %q, want username=%s&exact=true", lookups[0].Query, tt.want)
				}
			}
		})
	}
}

// TestKeycloakUserExists: the leader's look for a wallet user deleted by
// hand reads the user by id: true while it exists, false once deleted
// (404), an error when Keycloak fails otherwise.
func TestKeycloakUserExists(t *testing.T) {
	f := newFakeKeycloak(t)
	k := f.adapter(t)
	ctx := context.Background()
	u, err := k.CreateWalletUser(ctx, "val1", "claim-val1", testPassword("val1"))
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := k.UserExists(ctx, u.ID); !ok || err != nil {
		t.Fatalf("an existing user: %t, %v; want true", ok, err)
	}
	if err := k.DeleteUser(ctx, u.ID); err != nil {
		t.Fatal(err)
	}
	if ok, err := k.UserExists(ctx, u.ID); ok || err != nil {
		t.Fatalf("a deleted user: %t, %v; want false without an error", ok, err)
	}
}

func TestKeycloakCreateWalletUserFailures(t *testing.T) {
	tests := []struct {
		name      string
		setup     func(f *fakeKeycloak, cfg *KeycloakConfig)
		validator string
		wantIs    error
		wantText  []string
	}{
		{
			name: "existing username",
			setup: func(f *fakeKeycloak, _ *KeycloakConfig) {
				f.users["x"] = fakeUser{ID: "x", Username: "val1_walletuser"}
			},
			validator: "val1",
			wantIs:    domain.ErrConflict,
			wantText:  []string{`identity provider user "val1_walletuser" already exists`},
		},
		{
			name:      "keycloak 500",
			setup:     func(f *fakeKeycloak, _ *KeycloakConfig) { f.fail = http.StatusInternalServerError },
			validator: "val1",
			wantText:  []string{`identity provider: create user "val1_walletuser"`, "500 Internal Server Error"},
		},
		{
			name:      "keycloak 403 (admin client lacks manage-users)",
			setup:     func(f *fakeKeycloak, _ *KeycloakConfig) { f.fail = http.StatusForbidden },
			validator: "val1",
			wantText:  []string{`identity provider: create user "val1_walletuser"`, "403 Forbidden"},
		},
		{
			name:      "wrong client secret",
			setup:     func(_ *fakeKeycloak, cfg *KeycloakConfig) { cfg.ClientSecret = "wrong-" + cfg.ClientSecret },
			validator: "val1",
			wantText:  []string{`identity provider: create user "val1_walletuser"`, "admin token", "401", "Invalid client"},
		},
		{
			name:      "unreachable",
			setup:     func(f *fakeKeycloak, _ *KeycloakConfig) { f.srv.Close() },
			validator: "val1",
			wantText:  []string{`identity provider: create user "val1_walletuser"`, "unreachable"},
		},
		{
			name:      "empty validator name",
			validator: " ",
			wantIs:    domain.ErrInvalid,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeKeycloak(t)
			cfg := f.config()
			if tt.setup != nil {
				tt.setup(f, &cfg)
			}
			k, err := NewKeycloak(cfg)
			if err != nil {
				t.Fatal(err)
			}
			k.now = f.clock.now

			got, err := k.CreateWalletUser(context.Background(), tt.validator, "", testPassword(tt.validator))
			if err == nil {
				t.Fatalf("got user %+v, want an error", got)
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("got error %v, want errors.Is %v", err, tt.wantIs)
			}
			for _, w := range tt.wantText {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("got error %q, want it to contain %q", err, w)
				}
			}
			secrets := []string{f.secret}
			for _, c := range f.callsTo(http.MethodPost, "/users") {
				var rep userRep
				if jsonUnmarshal(c.Body, &rep) == nil {
					for _, cr := range rep.Credentials {
						secrets = append(secrets, cr.Value)
					}
				}
			}
			for _, s := range secrets {
				if strings.Contains(err.Error(), s) {
					t.Errorf("got error %q, want no password or client secret in it", err)
				}
			}
		})
	}
}

func TestKeycloakTokenCache(t *testing.T) {
	// Tokens live 300s; the adapter refreshes 30s before expiry.
	tests := []struct {
		name       string
		advance    time.Duration
		wantTokens int
	}{
		{name: "reused", advance: 0, wantTokens: 1},
		{name: "reused until shortly before expiry", advance: 269 * time.Second, wantTokens: 1},
		{name: "refreshed shortly before expiry", advance: 271 * time.Second, wantTokens: 2},
		{name: "refreshed after expiry", advance: time.Hour, wantTokens: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeKeycloak(t)
			k := f.adapter(t)
			ctx := context.Background()
			for _, v := range []string{"a", "b", "c"} {
				if _, err := k.CreateWalletUser(ctx, v, "", testPassword(v)); err != nil {
					t.Fatal(err)
				}
			}
			f.clock.advance(tt.advance)
			if _, err := k.CreateWalletUser(ctx, "d", "", testPassword("d")); err != nil {
				t.Fatalf("got error %v after %v, want none", err, tt.advance)
			}
			if err := k.DeleteUser(ctx, "absent"); err != nil {
				t.Fatal(err)
			}
			if got := len(f.callsTo(http.MethodPost, "/token")); got != tt.wantTokens {
				t.Errorf("got %d token requests, want %d", got, tt.wantTokens)
			}
			if got := len(f.callsTo(http.MethodPost, "/users")); got != 4 {
				t.Errorf("got %d create requests, want 4 (no rejected call retried)", got)
			}
		})
	}
}

func TestKeycloakTokenConcurrent(t *testing.T) {
	f := newFakeKeycloak(t)
	k := f.adapter(t)
	const n = 16
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			_, errs[i] = k.CreateWalletUser(context.Background(), "v"+string(rune('a'+i)), "", testPassword("v"))
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if got := len(f.callsTo(http.MethodPost, "/token")); got != 1 {
		t.Errorf("got %d token requests for %d concurrent creates, want 1", got, n)
	}
}

func TestKeycloakTokenRejected(t *testing.T) {
	// Keycloak restarted: the cached token is refused with 401; the adapter
	// fetches a new one and repeats the call once.
	f := newFakeKeycloak(t)
	k := f.adapter(t)
	ctx := context.Background()
	if _, err := k.CreateWalletUser(ctx, "a", "", testPassword("a")); err != nil {
		t.Fatal(err)
	}
	f.revokeTokens()
	if _, err := k.CreateWalletUser(ctx, "b", "", testPassword("b")); err != nil {
		t.Fatalf("got error %v, want none", err)
	}
	if got := len(f.callsTo(http.MethodPost, "/token")); got != 2 {
		t.Errorf("got %d token requests, want 2", got)
	}
	if got := f.userCount(); got != 2 {
		t.Errorf("got %d users, want 2", got)
	}
}

func TestKeycloakDeleteUser(t *testing.T) {
	tests := []struct {
		name    string
		id      string
		fail    int
		wantErr error // nil: success
		wantAny bool  // any error
	}{
		{name: "existing user", id: "present"},
		{name: "absent user", id: "absent"},
		{name: "id with a slash stays one path segment", id: "a/b"},
		{name: "empty id", id: "", wantErr: domain.ErrInvalid},
		{name: "dot-dot id", id: "..", wantErr: domain.ErrInvalid},
		{name: "keycloak 500", id: "present", fail: http.StatusInternalServerError, wantAny: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeKeycloak(t)
			f.users["present"] = fakeUser{ID: "present", Username: "p_walletuser"}
			f.fail = tt.fail
			k := f.adapter(t)

			err := k.DeleteUser(context.Background(), tt.id)
			switch {
			case tt.wantErr != nil:
				if !errors.Is(err, tt.wantErr) {
					t.Errorf("got error %v, want %v", err, tt.wantErr)
				}
				if n := len(f.callsTo(http.MethodDelete, "")); n != 0 {
					t.Errorf("got %d DELETE requests, want none", n)
				}
			case tt.wantAny:
				if err == nil || !strings.Contains(err.Error(), "identity provider: delete user present") {
					t.Errorf("got error %v, want identity provider: delete user present: ...", err)
				}
			default:
				if err != nil {
					t.Fatalf("got error %v, want none", err)
				}
				if _, ok := f.user(tt.id); ok {
					t.Errorf("got user %q still present, want it deleted", tt.id)
				}
				dels := f.callsTo(http.MethodDelete, "")
				want := "/admin/realms/wallets/users/" + url.PathEscape(tt.id)
				if len(dels) != 1 || dels[0].Path != strings.ReplaceAll(want, "%2F", "/") {
					t.Errorf("got DELETE calls %+v, want one to %s", dels, want)
				}
			}
		})
	}
}

func TestKeycloakPing(t *testing.T) {
	tests := []struct {
		name    string
		setup   func(f *fakeKeycloak, cfg *KeycloakConfig)
		wantErr string
	}{
		{name: "ok"},
		{name: "wrong secret", setup: func(_ *fakeKeycloak, cfg *KeycloakConfig) { cfg.ClientSecret = "nope-nope" }, wantErr: "identity provider: ping: admin token: keycloak answered 401"},
		{name: "unknown realm", setup: func(_ *fakeKeycloak, cfg *KeycloakConfig) { cfg.Realm = "other" }, wantErr: "identity provider: ping: admin token: keycloak answered 404"},
		{name: "unreachable", setup: func(f *fakeKeycloak, _ *KeycloakConfig) { f.srv.Close() }, wantErr: "identity provider: ping: admin token: keycloak unreachable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeKeycloak(t)
			cfg := f.config()
			if tt.setup != nil {
				tt.setup(f, &cfg)
			}
			k, err := NewKeycloak(cfg)
			if err != nil {
				t.Fatal(err)
			}
			err = k.Ping(context.Background())
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("got error %v, want none", err)
				}
				// Ping always asks Keycloak: a cached token proves nothing.
				if err := k.Ping(context.Background()); err != nil {
					t.Fatal(err)
				}
				if got := len(f.callsTo(http.MethodPost, "/token")); got != 2 {
					t.Errorf("got %d token requests for 2 pings, want 2", got)
				}
				return
			}
			if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
				t.Errorf("got error %v, want prefix %q", err, tt.wantErr)
			}
			if err != nil && strings.Contains(err.Error(), cfg.ClientSecret) {
				t.Errorf("got error %q, want no client secret in it", err)
			}
		})
	}
}

func TestKeycloakCanceled(t *testing.T) {
	f := newFakeKeycloak(t)
	k := f.adapter(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := k.CreateWalletUser(ctx, "a", "", testPassword("a"))
	if !errors.Is(err, context.Canceled) {
		t.Errorf("got error %v, want context.Canceled", err)
	}
}

func TestKeycloakBasePath(t *testing.T) {
	// Keycloak before 17 (or --http-relative-path=/auth) serves everything
	// under /auth; BaseURL carries the prefix.
	tests := []struct {
		name   string
		prefix string
	}{
		{name: "Keycloak 17+", prefix: ""},
		{name: "legacy /auth", prefix: "/auth"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeKeycloak(t)
			front := httptest.NewServer(http.StripPrefix(tt.prefix, f.srv.Config.Handler))
			t.Cleanup(front.Close)
			cfg := f.config()
			cfg.BaseURL = front.URL + tt.prefix + "/"
			k, err := NewKeycloak(cfg)
			if err != nil {
				t.Fatal(err)
			}
			k.now = f.clock.now
			u, err := k.CreateWalletUser(context.Background(), "val1", "", testPassword("val1"))
			if err != nil {
				t.Fatalf("got error %v, want none", err)
			}
			if err := k.DeleteUser(context.Background(), u.ID); err != nil {
				t.Fatalf("got error %v, want none", err)
			}
		})
	}
}

func TestNewKeycloakRejectsConfig(t *testing.T) {
	ok := KeycloakConfig{BaseURL: "https://kc.example.com", Realm: "r", ClientID: "c", ClientSecret: "very-secret-value"}
	tests := []struct {
		name   string
		change func(*KeycloakConfig)
		want   string
	}{
		{name: "no base URL", change: func(c *KeycloakConfig) { c.BaseURL = "" }, want: "base URL"},
		{name: "relative base URL", change: func(c *KeycloakConfig) { c.BaseURL = "kc.example.com" }, want: "base URL"},
		{name: "no realm", change: func(c *KeycloakConfig) { c.Realm = "" }, want: "realm"},
		{name: "realm with slash", change: func(c *KeycloakConfig) { c.Realm = "a/b" }, want: "realm"},
		{name: "no client id", change: func(c *KeycloakConfig) { c.ClientID = "" }, want: "client id"},
		{name: "no client secret", change: func(c *KeycloakConfig) { c.ClientSecret = "" }, want: "client secret"},
	}
	if _, err := NewKeycloak(ok); err != nil {
		t.Fatalf("got error %v for a complete config, want none", err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := ok
			tt.change(&cfg)
			_, err := NewKeycloak(cfg)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got error %v, want one about %s", err, tt.want)
			}
		})
	}
}

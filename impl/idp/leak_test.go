package idp

import (
	"bytes"
	"context"
	"fmt"
	"log"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// recorder is a resty logger that keeps what the HTTP library would log.
type recorder struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (r *recorder) printf(format string, v ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	fmt.Fprintf(&r.buf, format+"\n", v...)
}
func (r *recorder) Errorf(format string, v ...any) { r.printf(format, v...) }
func (r *recorder) Warnf(format string, v ...any)  { r.printf(format, v...) }
func (r *recorder) Debugf(format string, v ...any) { r.printf(format, v...) }

// TestNoSecretInErrorsOrLogs drives every failure the adapters know and
// greps each error text, the adapters' logs (they log nothing) and what
// the HTTP library would log for the client secret and every password.
func TestNoSecretInErrorsOrLogs(t *testing.T) {
	var logs bytes.Buffer
	prevSlog, prevLog := slog.Default(), log.Writer()
	slog.SetDefault(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	log.SetOutput(&logs)
	t.Cleanup(func() { slog.SetDefault(prevSlog); log.SetOutput(prevLog) })

	ctx := context.Background()
	var texts []string
	secrets := []string{}
	keep := func(err error) {
		if err != nil {
			texts = append(texts, err.Error())
		}
	}
	library := &recorder{}
	keycloak := func(f *fakeKeycloak, change func(*KeycloakConfig)) *Keycloak {
		cfg := f.config()
		if change != nil {
			change(&cfg)
		}
		secrets = append(secrets, cfg.ClientSecret)
		k, err := NewKeycloak(cfg)
		if err != nil {
			t.Fatal(err)
		}
		k.now = f.clock.now
		k.client.RestyClient().SetLogger(library).SetDebug(false)
		return k
	}

	scenarios := []struct {
		name   string
		setup  func(*fakeKeycloak)
		change func(*KeycloakConfig)
	}{
		{name: "ok"},
		{name: "admin 500 echoing the request", setup: func(f *fakeKeycloak) { f.fail = http.StatusInternalServerError }},
		{name: "admin 400 echoing the request", setup: func(f *fakeKeycloak) { f.fail = http.StatusBadRequest }},
		{name: "admin 403", setup: func(f *fakeKeycloak) { f.fail = http.StatusForbidden }},
		{name: "token 400 echoing the form", setup: func(f *fakeKeycloak) { f.failToken = http.StatusBadRequest }},
		{name: "token 500 echoing the form", setup: func(f *fakeKeycloak) { f.failToken = http.StatusInternalServerError }},
		{name: "wrong client secret", change: func(c *KeycloakConfig) { c.ClientSecret = "Wr0ng-Secret-Value" }},
		{name: "unreachable", setup: func(f *fakeKeycloak) { f.srv.Close() }},
	}
	for _, sc := range scenarios {
		f := newFakeKeycloak(t)
		f.publicClients["val1-wallet-ui"] = true
		if sc.setup != nil {
			sc.setup(f)
		}
		k := keycloak(f, sc.change)
		u, err := k.CreateWalletUser(ctx, "val1", "", testPassword("val1"))
		keep(err)
		_, err = k.CreateWalletUser(ctx, "val1", "", testPassword("val1")) // duplicate when the first worked
		keep(err)
		keep(k.DeleteUser(ctx, "some-id"))
		keep(k.Ping(ctx))
		for _, c := range f.callsTo(http.MethodPost, "/users") {
			var rep userRep
			if jsonUnmarshal(c.Body, &rep) == nil {
				for _, cr := range rep.Credentials {
					secrets = append(secrets, cr.Value)
				}
			}
		}
		if u.TemporaryPassword != "" {
			secrets = append(secrets, u.TemporaryPassword)
			_, err = PasswordToken(ctx, TokenURL(f.srv.URL, f.realm), "val1-wallet-ui", u.Username, u.TemporaryPassword+"x")
			keep(err)
			secrets = append(secrets, u.TemporaryPassword+"x")
		}
		_, err = PasswordToken(ctx, TokenURL(f.srv.URL, f.realm), "val1-wallet-ui", "val1_walletuser", "Some-Guess-123!")
		keep(err)
		secrets = append(secrets, "Some-Guess-123!")
	}

	dir := t.TempDir()
	l := openLocal(t, dir)
	u, err := l.CreateWalletUser(ctx, "val1", "", testPassword("val1"))
	if err != nil {
		t.Fatal(err)
	}
	secrets = append(secrets, u.TemporaryPassword)
	_, err = l.CreateWalletUser(ctx, "val1", "", testPassword("val1"))
	keep(err)
	breakLocalFile(t, dir)
	_, err = l.CreateWalletUser(ctx, "val2", "", testPassword("val2"))
	keep(err)
	keep(l.DeleteUser(ctx, u.ID))

	if len(texts) < 20 {
		t.Fatalf("got %d error texts, want the scenarios to produce at least 20", len(texts))
	}
	if logs.Len() != 0 {
		t.Errorf("got adapter logs %q, want none", logs.String())
	}
	library.mu.Lock()
	texts = append(texts, logs.String(), library.buf.String())
	library.mu.Unlock()
	for _, s := range secrets {
		if s == "" {
			t.Fatal("got an empty secret to look for")
		}
		for _, form := range []string{s, url.QueryEscape(s), url.PathEscape(s)} {
			for _, text := range texts {
				if strings.Contains(text, form) {
					t.Errorf("got %q, want no secret %q in it", text, form[:3]+"...")
				}
			}
		}
	}
}

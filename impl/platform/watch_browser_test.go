package platform_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/validator-manager/validator-manager/impl/apitest"
	"github.com/validator-manager/validator-manager/impl/domain"
)

// TestLiveValidatorsInBrowser opens the live validators page in headless
// Chromium with a token and watches a validator created meanwhile move
// from PENDING to RUNNING on the page, which is never reloaded; the
// documentation page links to it.
func TestLiveValidatorsInBrowser(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 120*time.Second)
	defer cancel()
	s := apitest.Start(t, apitest.Options{Watch: true})
	c := startChromium(t, ctx)

	t.Run("docs page links the live page", func(t *testing.T) {
		sess := c.open(t, ctx, s.URL+"/docs-ui.html")
		href := c.waitFor(t, ctx, sess, `(document.getElementById("live-validators-link")||{}).href`, func(v string) bool { return v != "" })
		if !strings.HasSuffix(href, "/docs-ui/validators.html") {
			t.Fatalf("link %q", href)
		}
	})

	t.Run("PENDING to RUNNING without reloading", func(t *testing.T) {
		sess := c.open(t, ctx, s.URL+"/docs-ui/validators.html#token="+s.Token)
		c.waitFor(t, ctx, sess, `document.getElementById("status").dataset.state`, func(v string) bool { return v == "live" })
		if _, err := c.eval(ctx, sess, "window.sameDocument = true"); err != nil {
			t.Fatal(err)
		}
		if r, err := s.Management.CreateValidatorWithResponse(ctx, apitest.ValidatorPayload("live-1")); err != nil || r.StatusCode() != http.StatusCreated {
			t.Fatalf("create: %v %v", err, r)
		}
		phase := `(document.querySelector('tr[data-name="live-1"] td.phase')||{}).textContent`
		c.waitFor(t, ctx, sess, phase, func(v string) bool { return v == "PENDING" })
		if err := s.Kube.SetStatus(ctx, "live-1", domain.PhaseRunning, true); err != nil {
			t.Fatal(err)
		}
		c.waitFor(t, ctx, sess, phase, func(v string) bool { return v == "RUNNING" })
		history, err := c.eval(ctx, sess, `liveValidators.history.join(",")`)
		if err != nil || !strings.Contains(history, "live-1 PENDING,live-1 RUNNING") {
			t.Fatalf("phases shown: %q (%v), want PENDING then RUNNING", history, err)
		}
		if same, err := c.eval(ctx, sess, "String(window.sameDocument)"); err != nil || same != "true" {
			t.Fatalf("the page was reloaded (marker %q, %v)", same, err)
		}
		// The token was taken out of the address bar.
		if loc, _ := c.eval(ctx, sess, "location.href"); strings.Contains(loc, s.Token) {
			t.Fatalf("token left in the address: %s", loc)
		}
	})
}

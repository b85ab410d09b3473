package server_test

import (
	"context"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/validator-manager/validator-manager/impl/apitest"
	"github.com/validator-manager/validator-manager/openapi"
)

// TestDocsPageInBrowser loads /docs-ui.html in headless Chromium, once per
// release, and checks that the rendered page lists every path of that
// release's contract. It needs Debian's chromium (.ci/run installs it); on a
// machine without it the test skips, except in CI where it fails.
func TestDocsPageInBrowser(t *testing.T) {
	browser, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("chromium is not installed; .ci/run installs it")
		}
		t.Skip("chromium is not installed (apt-get install chromium): skipping the browser test")
	}
	s := apitest.Start(t, apitest.Options{})
	releases := []struct {
		selector string // the page's name of the description; empty = the default (2.0)
		load     func() (*openapi3.T, error)
	}{
		{"", openapi.Platform},
		{"Release 1.11 — Validator Management API (/api)", openapi.Management},
	}
	dataPath := regexp.MustCompile(`data-path="([^"]+)"`)
	for _, rel := range releases {
		doc, err := rel.load()
		if err != nil {
			t.Fatal(err)
		}
		t.Run(doc.Info.Title, func(t *testing.T) {
			page := s.URL + "/docs-ui.html"
			if rel.selector != "" {
				page += "?urls.primaryName=" + url.QueryEscape(rel.selector)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			out, err := exec.CommandContext(ctx, browser,
				"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
				"--disable-background-networking", "--disable-component-update", "--disable-sync",
				"--no-first-run", "--user-data-dir="+t.TempDir(),
				"--virtual-time-budget=20000", "--dump-dom", page).Output()
			if err != nil {
				t.Fatalf("chromium: %v", err)
			}
			dom := string(out)
			if !strings.Contains(dom, doc.Info.Title) {
				t.Fatalf("page does not show %q", doc.Info.Title)
			}
			shown := map[string]bool{}
			for _, m := range dataPath.FindAllStringSubmatch(dom, -1) {
				shown[m[1]] = true
			}
			for path := range doc.Paths.Map() {
				if !shown[path] {
					t.Errorf("page does not list %s of %s (it lists %d paths)", path, doc.Info.Title, len(shown))
				}
			}
		})
	}
}

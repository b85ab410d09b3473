package server_test

import (
	"context"
	"encoding/json"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
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
	t.Parallel()
	browser := chromium(t)
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
			dom := dumpDOM(t, browser, page)
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

// chromium is Debian's chromium (.ci/run installs it); on a machine without
// it the test skips, except in CI where it fails.
func chromium(t *testing.T) string {
	t.Helper()
	browser, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("chromium is not installed; .ci/run installs it")
		}
		t.Skip("chromium is not installed (apt-get install chromium): skipping the browser test")
	}
	return browser
}

// dumpDOM is the DOM of page once headless Chromium has rendered it.
func dumpDOM(t *testing.T, browser, page string) string {
	t.Helper()
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
	return string(out)
}

// TestDocsPageShowsRoles: an operation opened on the documentation page
// (a deep link) shows the role it needs, as its description's sentence and
// as its x-required-role extension, in both releases.
func TestDocsPageShowsRoles(t *testing.T) {
	t.Parallel()
	browser := chromium(t)
	s := apitest.Start(t, apitest.Options{})
	for _, tt := range []struct{ page, role string }{
		{"/docs-ui.html#/validators/getIdentityDump", "admin"},
		{"/docs-ui.html?urls.primaryName=" + url.QueryEscape("Release 1.11 — Validator Management API (/api)") + "#/validators/createValidator", "operator"},
	} {
		dom := dumpDOM(t, browser, s.URL+tt.page)
		for _, want := range []string{
			"<strong>Required role</strong> (when roles are on, setting <code>api.auth.roles</code>): <code>" + tt.role + "</code>.",
			`<td>x-required-role</td><td>"` + tt.role + `"</td>`,
		} {
			if !strings.Contains(dom, want) {
				t.Errorf("%s: the opened operation does not show %q", tt.page, want)
			}
		}
	}
}

// measurePage loads the documentation page in a same-origin frame, waits
// for the release selector and reports, for each of its labels, the width
// the text needs and the width the selector gives it.
const measurePage = `<!doctype html><html><body style="margin:0">
<iframe id="f" src="/docs-ui.html" style="width:1280px;height:900px;border:0"></iframe>
<pre id="result">pending</pre>
<script>
function measure() {
  const doc = document.getElementById('f').contentDocument;
  const sel = doc && doc.querySelector('.topbar select');
  if (!sel || sel.options.length < 2) { setTimeout(measure, 100); return; }
  const style = doc.defaultView.getComputedStyle(sel);
  const ctx = document.createElement('canvas').getContext('2d');
  ctx.font = style.fontWeight + ' ' + style.fontSize + ' ' + style.fontFamily;
  // The room for text: the box minus its padding, borders and the arrow.
  const arrow = 20;
  const room = sel.getBoundingClientRect().width - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight)
    - parseFloat(style.borderLeftWidth) - parseFloat(style.borderRightWidth) - arrow;
  const out = [...sel.options].map(o => ({label: o.text, need: Math.ceil(ctx.measureText(o.text).width), room: Math.floor(room)}));
  document.getElementById('result').textContent = 'RESULT' + JSON.stringify(out) + 'END';
}
measure();
</script></body></html>`

// TestDocsReleaseSelectorShowsFullLabels: the top bar's selector is wide
// enough for each release's whole name (it used to cut them off at
// "…API (/ap"). It also leaves a screenshot of the page in the test's log
// directory for a person to look at (DOCS_SCREENSHOT names a file to keep it).
func TestDocsReleaseSelectorShowsFullLabels(t *testing.T) {
	t.Parallel()
	browser := chromium(t)
	s := apitest.Start(t, apitest.Options{})
	mux := http.NewServeMux()
	mux.HandleFunc("/measure.html", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(measurePage))
	})
	mux.Handle("/", s.App.Server)
	site := httptest.NewServer(mux)
	defer site.Close()

	chrome := func(args ...string) []byte {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
			"--disable-background-networking", "--disable-component-update", "--disable-sync",
			"--no-first-run", "--user-data-dir=" + t.TempDir(), "--virtual-time-budget=20000", "--window-size=1280,900"}
		out, err := exec.CommandContext(ctx, browser, append(base, args...)...).Output()
		if err != nil {
			t.Fatalf("chromium: %v", err)
		}
		return out
	}
	dom := string(chrome("--dump-dom", site.URL+"/measure.html"))
	m := regexp.MustCompile(`RESULT(.*)END`).FindStringSubmatch(dom)
	if m == nil {
		t.Fatalf("the page reported no measurement (selector not rendered?)")
	}
	var labels []struct {
		Label      string
		Need, Room float64
	}
	if err := json.Unmarshal([]byte(html.UnescapeString(m[1])), &labels); err != nil {
		t.Fatal(err)
	}
	if len(labels) != 2 {
		t.Fatalf("selector lists %d releases, want 2: %+v", len(labels), labels)
	}
	for _, l := range labels {
		t.Logf("%q needs %.0f px, has %.0f px", l.Label, l.Need, l.Room)
		if l.Need > l.Room {
			t.Errorf("%q is cut off: it needs %.0f px, the selector gives %.0f px", l.Label, l.Need, l.Room)
		}
	}
	shot := os.Getenv("DOCS_SCREENSHOT")
	if shot == "" {
		shot = filepath.Join(t.TempDir(), "docs.png")
	}
	chrome("--screenshot="+shot, site.URL+"/docs-ui.html")
	if fi, err := os.Stat(shot); err != nil || fi.Size() == 0 {
		t.Fatalf("no screenshot: %v", err)
	}
	t.Logf("screenshot: %s", shot)
}

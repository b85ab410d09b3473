// Package docs serves the two API descriptions and the interactive page that
// lets a person try both releases. Every asset is embedded in the binary.
package docs

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/swaggest/swgui"
	"github.com/swaggest/swgui/v5emb"
)

// Paths of the documentation. AssetsPrefix serves the page's scripts and styles.
const (
	PlatformPath   = "/v3/api-docs"
	ManagementPath = "/v3/api-docs/management"
	AssetsPrefix   = "/docs-ui/"
)

// Names of the two descriptions in the page's selector.
const (
	platformName   = "Release 2.0 — Platform Management API (/api/v1)"
	managementName = "Release 1.11 — Validator Management API (/api)"
)

// Docs holds the rendered descriptions and page.
type Docs struct {
	Platform   []byte // release 2.0 description, JSON
	Management []byte // release 1.11 description, JSON
	Page       []byte // /docs-ui.html
	Assets     http.Handler
}

// New renders both descriptions and the page once, at start.
func New(platform, management *openapi3.T) (*Docs, error) {
	p, err := json.Marshal(platform)
	if err != nil {
		return nil, fmt.Errorf("platform description: %w", err)
	}
	m, err := json.Marshal(management)
	if err != nil {
		return nil, fmt.Errorf("management description: %w", err)
	}
	urls, _ := json.Marshal([]map[string]string{
		{"url": PlatformPath, "name": platformName},
		{"url": ManagementPath, "name": managementName},
	})
	ui := v5emb.NewHandlerWithConfig(swgui.Config{
		Title:       "validator-manager API",
		SwaggerJSON: PlatformPath,
		BasePath:    AssetsPrefix,
		ShowTopBar:  true,
		// Swagger UI caps the selector's label at 600 px, sharing it with
		// "Select a definition", which cut the release names off; the
		// selector takes the room its longest name needs.
		AppendHead: `<style>.swagger-ui .topbar .download-url-wrapper .select-label{max-width:none}` +
			`.swagger-ui .topbar .download-url-wrapper .select-label select{min-width:34em;flex:none;width:auto}</style>` +
			consoleLink,
		SettingsUI: map[string]string{
			// The top bar's selector switches between the two releases.
			"urls":                 string(urls),
			`"urls.primaryName"`:   `"` + platformName + `"`,
			"persistAuthorization": "true",
			// Each operation's x-required-role (and x-audit-validator)
			// shows under it, beside the sentence in its description.
			"showExtensions": "true",
		},
	})
	rec := httptest.NewRecorder()
	ui.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, AssetsPrefix, nil))
	if rec.Code != http.StatusOK {
		return nil, fmt.Errorf("docs page: status %d", rec.Code)
	}
	return &Docs{Platform: p, Management: m, Page: rec.Body.Bytes(), Assets: withConsole(ui)}, nil
}

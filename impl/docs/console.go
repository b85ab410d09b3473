package docs

import (
	"embed"
	"io/fs"
	"net/http"
	"strings"
)

// ConsolePagePath is the ledger console page: an xterm.js terminal
// (vendored from npm @xterm/xterm 6.0.0 under console/xterm, embedded so
// the binary needs no network) that opens /api/ws/ledger-console with the
// token the user enters. It is served with the documentation's assets.
const ConsolePagePath = AssetsPrefix + "console.html"

//go:embed console/console.html console/console.js console/xterm/xterm.js console/xterm/xterm.css console/xterm/LICENSE
var consoleFiles embed.FS

// consoleLink adds a link to the console page to the documentation page's
// top bar, once Swagger UI has drawn it.
const consoleLink = `<script>window.addEventListener("load",function(){var t=setInterval(function(){` +
	`var bar=document.querySelector(".swagger-ui .topbar-wrapper");if(!bar)return;clearInterval(t);` +
	`var a=document.createElement("a");a.id="ledger-console-link";a.href="` + ConsolePagePath + `";a.textContent="Ledger console";` +
	`a.style.cssText="color:#fff;margin-left:1em;white-space:nowrap;font-family:sans-serif";bar.appendChild(a)},100)});</script>` +
	`<noscript><a href="` + ConsolePagePath + `">Ledger console</a></noscript>`

// withConsole serves the console page's files and hands every other asset
// to the documentation page's handler.
func withConsole(next http.Handler) http.Handler {
	sub, err := fs.Sub(consoleFiles, "console")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	files := http.StripPrefix(AssetsPrefix, http.FileServerFS(sub))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := strings.TrimPrefix(r.URL.Path, AssetsPrefix)
		switch {
		case name == "console.html" || name == "console.js" || strings.HasPrefix(name, "xterm/"):
			w.Header().Set("X-Content-Type-Options", "nosniff")
			files.ServeHTTP(w, r)
		default:
			next.ServeHTTP(w, r)
		}
	})
}

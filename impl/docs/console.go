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

// LivePagePath is the live validators page: the phases of the validators,
// changing as they change, from release 1.11's watch stream.
const LivePagePath = AssetsPrefix + "validators.html"

//go:embed console/console.html console/console.js console/xterm/xterm.js console/xterm/xterm.css console/xterm/LICENSE
var consoleFiles embed.FS

//go:embed live/validators.html live/validators.js
var liveFiles embed.FS

// consoleLink adds links to the console and live validators pages to the
// documentation page's top bar, once Swagger UI has drawn it.
const consoleLink = `<script>window.addEventListener("load",function(){var t=setInterval(function(){` +
	`var bar=document.querySelector(".swagger-ui .topbar-wrapper");if(!bar)return;clearInterval(t);` +
	`[["ledger-console-link","` + ConsolePagePath + `","Ledger console"],["live-validators-link","` + LivePagePath + `","Live validators"]].forEach(function(l){` +
	`var a=document.createElement("a");a.id=l[0];a.href=l[1];a.textContent=l[2];` +
	`a.style.cssText="color:#fff;margin-left:1em;white-space:nowrap;font-family:sans-serif";bar.appendChild(a)})},100)});</script>` +
	`<noscript><a href="` + ConsolePagePath + `">Ledger console</a> <a href="` + LivePagePath + `">Live validators</a></noscript>`

// withConsole serves the console and live validators pages' files and
// hands every other asset to the documentation page's handler.
func withConsole(next http.Handler) http.Handler {
	serve := func(files embed.FS, dir string) http.Handler {
		sub, err := fs.Sub(files, dir)
		if err != nil {
			panic(err) // the embedded tree is fixed at build time
		}
		return http.StripPrefix(AssetsPrefix, http.FileServerFS(sub))
	}
	console, live := serve(consoleFiles, "console"), serve(liveFiles, "live")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := strings.TrimPrefix(r.URL.Path, AssetsPrefix)
		switch {
		case name == "console.html" || name == "console.js" || strings.HasPrefix(name, "xterm/"):
			w.Header().Set("X-Content-Type-Options", "nosniff")
			console.ServeHTTP(w, r)
		case name == "validators.html" || name == "validators.js":
			w.Header().Set("X-Content-Type-Options", "nosniff")
			live.ServeHTTP(w, r)
		default:
			next.ServeHTTP(w, r)
		}
	})
}

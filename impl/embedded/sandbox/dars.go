package sandbox

import (
	"bufio"
	"io"
	"path"
	"regexp"
	"strings"
)

// mainDalfName is a Main-Dalf file name as the Daml assistant writes it:
// name-version-packageid.dalf (the package id optional).
var mainDalfName = regexp.MustCompile(`^(.+?)-(\d[0-9A-Za-z.+_]*?)(?:-[0-9a-f]{64})?\.dalf$`)

// darNameVersion reads the manifest's Name (name-version) or, failing that,
// its Main-Dalf file name.
func darNameVersion(attrs map[string]string) (string, string) {
	for _, candidate := range []string{attrs["Name"] + ".dalf", path.Base(attrs["Main-Dalf"])} {
		if m := mainDalfName.FindStringSubmatch(candidate); m != nil {
			return m[1], m[2]
		}
	}
	return "", ""
}

// readManifest reads a JAR manifest's "Key: value" lines into attrs; a line
// that starts with a space continues the previous value.
func readManifest(r io.Reader, attrs map[string]string) {
	sc := bufio.NewScanner(r)
	var last string
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		if strings.HasPrefix(line, " ") && last != "" {
			attrs[last] += line[1:]
			continue
		}
		if k, v, ok := strings.Cut(line, ":"); ok {
			last = strings.TrimSpace(k)
			attrs[last] = strings.TrimSpace(v)
		}
	}
}

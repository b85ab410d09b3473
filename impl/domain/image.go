package domain

import (
	"fmt"
	"regexp"
	"strings"
)

// Images of a validator, as Splice's charts name them: each runs
// <imageRepo>/<component>:<imageTag>, imageRepo being the registry prefix
// (ghcr.io/digital-asset/decentralized-canton-sync/docker).
const (
	ImageParticipant  = "canton-participant"
	ImageValidatorApp = "validator-app"
	ImageWalletUI     = "wallet-web-ui"
	ImageANSUI        = "ans-web-ui"
)

// ImageComponents are the validator's images under imageRepo.
var ImageComponents = []string{ImageParticipant, ImageValidatorApp, ImageWalletUI, ImageANSUI}

// The grammar of an image reference (the OCI distribution reference: a
// domain with optional port, lower-case path components, a tag).
var (
	imageNamePattern = func() *regexp.Regexp {
		domainComponent := `(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])`
		domain := domainComponent + `(?:\.` + domainComponent + `)*(?::[0-9]+)?`
		path := `[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*`
		return regexp.MustCompile(`^(?:` + domain + `/)?` + path + `(?:/` + path + `)*$`)
	}()
	imageTagPattern = regexp.MustCompile(`^[\w][\w.-]{0,127}$`)
)

// maxImageNameLength is the longest repository name a registry accepts.
const maxImageNameLength = 255

// ImageReference is the image of component: <repo>/<component>:<tag>.
func ImageReference(repo, component, tag string) string {
	return repo + "/" + component + ":" + tag
}

// ParseImageReference checks that ref is a well-formed <name>:<tag>
// reference, the form the workloads use.
func ParseImageReference(ref string) error {
	i := strings.LastIndex(ref, ":")
	if i < 0 || strings.Contains(ref[i:], "/") {
		return fmt.Errorf("image reference %q has no tag", ref)
	}
	name, tag := ref[:i], ref[i+1:]
	if len(name) > maxImageNameLength || !imageNamePattern.MatchString(name) {
		return fmt.Errorf("image reference %q: %q is not a repository name", ref, name)
	}
	if !imageTagPattern.MatchString(tag) {
		return fmt.Errorf("image reference %q: %q is not a tag", ref, tag)
	}
	return nil
}

// CheckImageRepo refuses an imageRepo that is not the registry prefix the
// components' images live under: not a repository name, or one that
// already ends in a component (the images would not exist).
func CheckImageRepo(repo string) error {
	const form = "must be the registry prefix of Splice's images (such as ghcr.io/digital-asset/decentralized-canton-sync/docker): each image is <imageRepo>/<component>:<imageTag>"
	for _, c := range ImageComponents {
		if repo == c || strings.HasSuffix(repo, "/"+c) {
			return fmt.Errorf("ends in the component %q; it %s", c, form)
		}
	}
	if !imageNamePattern.MatchString(repo) || len(repo)+len("/"+ImageParticipant) > maxImageNameLength {
		return fmt.Errorf("is not a repository name without tag or digest; it %s", form)
	}
	return nil
}

// CheckImageTag refuses a tag an image reference cannot carry.
func CheckImageTag(tag string) error {
	if !imageTagPattern.MatchString(tag) {
		return fmt.Errorf("is not an image tag (letters, digits, '_', '.' and '-', at most 128, not starting with '.' or '-')")
	}
	return nil
}

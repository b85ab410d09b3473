package domain

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/distribution/reference"
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

// ImageReference is the image of component: <repo>/<component>:<tag>.
func ImageReference(repo, component, tag string) string {
	return repo + "/" + component + ":" + tag
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
	// The longest component's image must still parse as a repository name.
	named, err := reference.ParseNormalizedNamed(repo + "/" + ImageParticipant)
	if err != nil || !reference.IsNameOnly(named) {
		return fmt.Errorf("is not a repository name without tag or digest; it %s", form)
	}
	return nil
}

// imageTag is the tag grammar of distribution/reference, anchored.
var imageTag = regexp.MustCompile(`^` + reference.TagRegexp.String() + `$`)

// CheckImageTag refuses a tag an image reference cannot carry.
func CheckImageTag(tag string) error {
	if !imageTag.MatchString(tag) {
		return fmt.Errorf("is not an image tag (letters, digits, '_', '.' and '-', at most 128, not starting with '.' or '-')")
	}
	return nil
}

package apitest

import (
	"fmt"

	"github.com/distribution/reference"
)

// ParseImageReference checks that ref is a <name>:<tag> reference as the
// kubelet parses it (distribution/reference, which it uses itself).
func ParseImageReference(ref string) error {
	named, err := reference.ParseNormalizedNamed(ref)
	if err != nil {
		return fmt.Errorf("image reference %q: %w", ref, err)
	}
	if _, ok := named.(reference.Tagged); !ok {
		return fmt.Errorf("image reference %q has no tag", ref)
	}
	return nil
}

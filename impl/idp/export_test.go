package idp

// OpenLocalFor opens the local identity provider of installation.
func OpenLocalFor(dir, installation string) (*Local, error) {
	return OpenLocalWith(dir, LocalOptions{Installation: installation})
}

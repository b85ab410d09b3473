package idp

// OpenLocalFor opens the local identity provider of installation.
func OpenLocalFor(dir, installation string) (*Local, error) {
	return OpenLocal(dir, LocalOptions{Installation: installation})
}

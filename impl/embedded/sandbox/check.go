package sandbox

import "fmt"

// check refuses a state whose entries a handler would dereference blindly
// (null, or lacking what each is created with); a node's maps are made non-nil.
func (st *state) check() error {
	// The first start writes the secret: without one the file is not a state.
	if st.ClientSecret == "" {
		return fmt.Errorf("it has no clientSecret: it is empty, null or not a sandbox state")
	}
	// Without its key, every token is refused.
	if len(st.TokenKey) > 0 {
		if _, err := parseTokenKey(st.TokenKey); err != nil {
			return err
		}
	}
	for name, ns := range st.Nodes {
		switch {
		case ns == nil:
			return fmt.Errorf("nodes.%s is null", name)
		case ns.Fingerprint == "" || ns.OperatorUser == "" || ns.OperatorParty == "":
			return fmt.Errorf("nodes.%s lacks its fingerprint, operatorUser or operatorParty", name)
		}
		makeMap(&ns.Parties)
		makeMap(&ns.Users)
		makeMap(&ns.WalletUsers)
		for id, p := range ns.Parties {
			if p == nil {
				return fmt.Errorf("nodes.%s.parties.%s is null", name, id)
			}
		}
		for id, u := range ns.Users {
			if u == nil {
				return fmt.Errorf("nodes.%s.users.%s is null", name, id)
			}
		}
	}
	for id, h := range st.Hosting {
		if h == nil {
			return fmt.Errorf("hosting.%s is null", id)
		}
	}
	return nil
}

// makeMap makes *m an empty map when it is nil (absent or null in the file).
func makeMap[K comparable, V any](m *map[K]V) {
	if *m == nil {
		*m = map[K]V{}
	}
}

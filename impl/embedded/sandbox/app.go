package sandbox

import (
	"encoding/base64"
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// spliceError writes Splice's ErrorResponse; false, as cantonError.
func spliceError(w http.ResponseWriter, status int, msg string) bool {
	writeJSON(w, status, map[string]string{"error": msg})
	return false
}

// app wraps a validator app handler; admin endpoints take the bearer token.
func (n *Network) app(name string, admin, mutates bool, h func(w http.ResponseWriter, r *http.Request, ns *nodeState) bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if admin && !n.authorized(r) {
			spliceError(w, http.StatusUnauthorized, "invalid or missing bearer token")
			return
		}
		n.mu.Lock()
		defer n.mu.Unlock()
		ns := n.st.Nodes[name]
		n.durably(w, mutates, func(w http.ResponseWriter, msg string) { spliceError(w, http.StatusServiceUnavailable, msg) },
			func(w http.ResponseWriter) bool { return h(w, r, ns) })
	}
}

func (n *Network) appRoutes(mux *http.ServeMux, name string) {
	const base = "/api/validator"
	mux.HandleFunc("GET "+base+"/v0/validator-user", n.app(name, false, false, validatorUser))
	mux.HandleFunc("GET "+base+"/v0/admin/users", n.app(name, true, false, listWalletUsers))
	mux.HandleFunc("POST "+base+"/v0/admin/users", n.app(name, true, true, onboardWalletUser))
	mux.HandleFunc("POST "+base+"/v0/admin/users/offboard", n.app(name, true, true, offboardWalletUser))
	mux.HandleFunc("GET "+base+"/v0/admin/participant/identities", n.app(name, true, false, func(w http.ResponseWriter, r *http.Request, ns *nodeState) bool {
		writeJSON(w, http.StatusOK, identitiesDump(name, ns))
		return false
	}))
	mux.HandleFunc("GET "+base+"/v0/admin/domain/data-snapshot", n.dataSnapshot(name))
	// The app runs while its listener does (its readiness is the pod's, not simulated here).
	mux.HandleFunc("GET "+base+"/livez", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
}

func validatorUser(w http.ResponseWriter, r *http.Request, ns *nodeState) bool {
	writeJSON(w, http.StatusOK, map[string]any{"party_id": ns.OperatorParty, "user_name": ns.OperatorUser, "featured": false})
	return false
}

func listWalletUsers(w http.ResponseWriter, r *http.Request, ns *nodeState) bool {
	writeJSON(w, http.StatusOK, map[string]any{"usernames": append([]string{}, slices.Sorted(maps.Keys(ns.WalletUsers))...)})
	return false
}

// onboardWalletUser answers an onboarded user's party again.
func onboardWalletUser(w http.ResponseWriter, r *http.Request, ns *nodeState) bool {
	var req struct {
		Name                 string `json:"name"`
		PartyID              string `json:"party_id"`
		CreatePartyIfMissing bool   `json:"createPartyIfMissing"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Name == "" {
		return spliceError(w, http.StatusBadRequest, "the request must name the user (name)")
	}
	if p, ok := ns.WalletUsers[req.Name]; ok {
		writeJSON(w, http.StatusOK, map[string]string{"party_id": p})
		return false
	}
	if !userIDRE.MatchString(req.Name) {
		return spliceError(w, http.StatusBadRequest, "invalid user name "+strconv.Quote(req.Name))
	}
	p := req.PartyID
	switch {
	case p == "":
		hint := req.Name
		if !partyHintRE.MatchString(hint) || strings.Contains(hint, "::") {
			return spliceError(w, http.StatusBadRequest, "the user name "+strconv.Quote(req.Name)+" is not a valid party hint")
		}
		p = hint + "::" + ns.Fingerprint
		if _, ok := ns.Parties[p]; !ok {
			ns.addParty(hint)
		}
	case ns.Parties[p] == nil && req.CreatePartyIfMissing:
		hint, fp, ok := strings.Cut(p, "::")
		if !ok || fp != ns.Fingerprint || !partyHintRE.MatchString(hint) {
			return spliceError(w, http.StatusBadRequest, "party "+strconv.Quote(p)+" cannot be allocated on this participant")
		}
		ns.addParty(hint)
	case ns.Parties[p] == nil:
		return spliceError(w, http.StatusBadRequest, "party "+strconv.Quote(p)+" does not exist")
	}
	u := ns.Users[req.Name]
	if u == nil {
		u = &user{ID: req.Name, ResourceVersion: ns.nextVersion()}
		ns.Users[req.Name] = u
	}
	u.PrimaryParty = p
	u.Rights = appendNew(u.Rights, []right{{Kind: "CanActAs", Party: p}, {Kind: "CanReadAs", Party: p}})
	ns.WalletUsers[req.Name] = p
	ns.Traffic.Consumed += 5_000
	writeJSON(w, http.StatusOK, map[string]string{"party_id": p})
	return true
}

func offboardWalletUser(w http.ResponseWriter, r *http.Request, ns *nodeState) bool {
	name := r.URL.Query().Get("username")
	if _, ok := ns.WalletUsers[name]; !ok {
		return spliceError(w, http.StatusNotFound, "user "+strconv.Quote(name)+" is not onboarded")
	}
	delete(ns.WalletUsers, name)
	delete(ns.Users, name)
	ns.Traffic.Consumed += 2_000
	w.WriteHeader(http.StatusOK)
	return true
}

func identitiesDump(validator string, ns *nodeState) map[string]any {
	keys := []any{}
	for _, k := range ns.Keys {
		keys = append(keys, map[string]string{"keyPair": k.KeyPair, "name": k.Name})
	}
	store, _ := json.Marshal(map[string]any{"participant": ns.participantUID(validator), "namespace": ns.Fingerprint, "at": time.Now().UTC().Format(time.RFC3339)})
	return map[string]any{
		"id":                      ns.participantUID(validator),
		"keys":                    keys,
		"authorizedStoreSnapshot": base64.StdEncoding.EncodeToString(store),
		"version":                 Version,
	}
}

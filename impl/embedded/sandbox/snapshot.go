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
	"unicode"
	"unicode/utf8"
)

// dataSnapshot is getValidatorDomainDataSnapshot, for the operator's grant and
// wallet user. Every timestamp counts as clean, so force changes nothing.
func (n *Network) dataSnapshot(name string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		n.mu.Lock()
		defer n.mu.Unlock()
		c, ok := n.claimsLocked(r)
		if !ok {
			spliceError(w, http.StatusUnauthorized, "invalid or missing bearer token")
			return
		}
		// A user's token (a token's subject is never empty) is the wallet user's or refused.
		ns := n.st.Nodes[name]
		if c.AuthorizedParty != "" && c.Subject != ns.WalletUser {
			spliceError(w, http.StatusForbidden, "user "+strconv.Quote(c.Subject)+" is not an administrator of this validator")
			return
		}
		q := r.URL.Query()
		ts := q.Get("timestamp")
		at, err := time.Parse(time.RFC3339Nano, ts)
		if err != nil || !strings.HasSuffix(ts, "Z") {
			spliceError(w, http.StatusBadRequest, "timestamp "+strconv.Quote(ts)+" is not an ISO-8601 UTC timestamp")
			return
		}
		migration := int64(0)
		if nd := n.nodes[name]; nd != nil {
			migration = nd.migrationID
		}
		if s := q.Get("migration_id"); s != "" {
			if migration, err = strconv.ParseInt(s, 10, 64); err != nil || migration < 0 {
				spliceError(w, http.StatusBadRequest, "migration_id "+strconv.Quote(s)+" is not a migration id")
				return
			}
		}
		if s := q.Get("force"); s != "" {
			if _, err := strconv.ParseBool(s); err != nil {
				spliceError(w, http.StatusBadRequest, "force "+strconv.Quote(s)+" is not a boolean")
				return
			}
		}
		writeJSON(w, http.StatusOK, map[string]any{
			"data_snapshot": n.migrationDumpLocked(name, ns, at, migration),
			"migration_id":  migration,
		})
	}
}

// migrationDumpLocked is the DomainMigrationDump: the sandbox has no contracts,
// so its ACS lists the parties, and keeps no DAR bytes, so DARs are empty.
func (n *Network) migrationDumpLocked(validator string, ns *nodeState, at time.Time, migration int64) map[string]any {
	parties := append([]string{}, slices.Sorted(maps.Keys(ns.Parties))...)
	acs, _ := json.Marshal(map[string]any{"participant": ns.participantUID(validator), "timestamp": at.UTC().Format(time.RFC3339Nano), "parties": parties, "contracts": []any{}})
	users := make([]any, 0, len(ns.Users))
	for _, id := range slices.Sorted(maps.Keys(ns.Users)) {
		u := ns.Users[id]
		rights := make([]any, 0, len(u.Rights))
		for _, rt := range u.Rights {
			r := map[string]string{"kind": lowerFirst(rt.Kind)}
			if rt.Party != "" {
				r["party"] = rt.Party
			}
			rights = append(rights, r)
		}
		annotations := make([]any, 0, len(u.Annotations))
		for _, k := range slices.Sorted(maps.Keys(u.Annotations)) {
			annotations = append(annotations, map[string]string{"key": k, "value": u.Annotations[k]})
		}
		pu := map[string]any{"id": u.ID, "rights": rights, "isDeactivated": u.IsDeactivated, "annotations": annotations, "identityProviderId": ""}
		if u.PrimaryParty != "" {
			pu["primaryParty"] = u.PrimaryParty
		}
		users = append(users, pu)
	}
	dars := []any{}
	for _, d := range ns.darList() {
		dars = append(dars, map[string]string{"hash": d.MainPackageID, "content": ""})
	}
	return map[string]any{
		"participant":       identitiesDump(validator, ns),
		"participant_users": map[string]any{"identityProviders": []any{}, "users": users},
		"acs_snapshot":      base64.StdEncoding.EncodeToString(acs),
		"acs_timestamp":     at.UTC().Format(time.RFC3339Nano),
		"dars":              dars,
		"migration_id":      migration,
		"domain_id":         n.st.SynchronizerID,
		"created_at":        time.Now().UTC().Format(time.RFC3339Nano),
	}
}

// lowerFirst turns the ledger's right kinds (CanActAs) into the dump's.
func lowerFirst(s string) string {
	r, size := utf8.DecodeRuneInString(s)
	return string(unicode.ToLower(r)) + s[size:]
}

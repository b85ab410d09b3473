package sandbox

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"
)

// The scan service is public (no token), as Splice's is.
func (n *Network) scanRoutes(mux *http.ServeMux) {
	const base = "/api/scan"
	mux.HandleFunc("GET "+base+"/v0/domains/{domain}/members/{member}/traffic-status", n.trafficStatus)
	mux.HandleFunc("GET "+base+"/v0/state/acs/snapshot-timestamp", n.snapshotTimestamp)
	mux.HandleFunc("POST "+base+"/v0/holdings/summary", n.holdingsSummary)
}

func (n *Network) trafficStatus(w http.ResponseWriter, r *http.Request) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if r.PathValue("domain") != n.st.SynchronizerID {
		spliceError(w, http.StatusNotFound, "unknown synchronizer "+r.PathValue("domain"))
		return
	}
	uid, ok := strings.CutPrefix(r.PathValue("member"), "PAR::")
	if !ok {
		spliceError(w, http.StatusBadRequest, "member_id must be PAR::<uid> or MED::<uid>")
		return
	}
	for name, ns := range n.st.Nodes {
		if ns.participantUID(name) == uid {
			t := ns.Traffic
			writeJSON(w, http.StatusOK, map[string]any{"traffic_status": map[string]any{
				"actual": map[string]int64{"total_consumed": t.Consumed, "total_limit": t.Limit},
				"target": map[string]int64{"total_purchased": t.Purchased},
			}})
			return
		}
	}
	spliceError(w, http.StatusNotFound, "member "+r.PathValue("member")+" is not known on the synchronizer")
}

func (n *Network) snapshotTimestamp(w http.ResponseWriter, r *http.Request) {
	before, err := time.Parse(time.RFC3339, r.URL.Query().Get("before"))
	if err != nil || r.URL.Query().Get("migration_id") == "" {
		spliceError(w, http.StatusBadRequest, "before (ISO-8601) and migration_id are required")
		return
	}
	// Snapshots are taken every ten minutes.
	writeJSON(w, http.StatusOK, map[string]string{"record_time": before.UTC().Truncate(10 * time.Minute).Format(time.RFC3339)})
}

// holdingsSummary: operator parties hold a faucet amount, others nothing.
func (n *Network) holdingsSummary(w http.ResponseWriter, r *http.Request) {
	var req struct {
		MigrationID   *int64   `json:"migration_id"`
		RecordTime    string   `json:"record_time"`
		OwnerPartyIDs []string `json:"owner_party_ids"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.MigrationID == nil || req.RecordTime == "" {
		spliceError(w, http.StatusBadRequest, "migration_id, record_time and owner_party_ids are required")
		return
	}
	n.mu.Lock()
	operators := map[string]bool{}
	for _, ns := range n.st.Nodes {
		operators[ns.OperatorParty] = true
	}
	n.mu.Unlock()
	summaries := []any{}
	for _, p := range req.OwnerPartyIDs {
		amount := "0.0000000000"
		if operators[p] {
			amount = "1000.0000000000"
		}
		summaries = append(summaries, map[string]string{
			"party_id": p, "total_unlocked_coin": amount, "total_locked_coin": "0.0000000000", "total_coin_holdings": amount,
			"accumulated_holding_fees_unlocked": "0.0000000000", "accumulated_holding_fees_locked": "0.0000000000",
			"accumulated_holding_fees_total": "0.0000000000", "total_available_coin": amount,
		})
	}
	writeJSON(w, http.StatusOK, map[string]any{"record_time": req.RecordTime, "migration_id": *req.MigrationID, "computed_as_of_round": 1, "summaries": summaries})
}

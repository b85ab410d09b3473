package sandbox

import (
	"archive/zip"
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Canton error categories and gRPC codes the sandbox answers with
// (unavailable: a transient failure, the ledger's answer when it cannot persist).
const (
	catInvalid      = 8
	catExists       = 10
	catMissing      = 11
	catAuth         = 6
	catUnavailable  = 1
	catContention   = 2
	grpcInvalid     = 3
	grpcMissing     = 5
	grpcExists      = 6
	grpcUnauth      = 16
	grpcUnavailable = 14
	grpcAborted     = 10
)

// cantonError writes a JsCantonError and reports false (nothing changed),
// so that one return writes and reports it.
func cantonError(w http.ResponseWriter, status int, code, cause string, category, grpc int) bool {
	writeJSON(w, status, map[string]any{
		"code": code, "cause": cause, "context": map[string]string{}, "resources": []any{},
		"errorCategory": category, "grpcCodeValue": grpc, "correlationId": randomHex(8), "traceId": randomHex(16),
		"definiteAnswer": false,
	})
	return false
}

func invalid(w http.ResponseWriter, code, format string, args ...any) bool {
	return cantonError(w, http.StatusBadRequest, code, fmt.Sprintf(format, args...), catInvalid, grpcInvalid)
}

// badRequest answers INVALID_ARGUMENT the way the ledger words it.
func badRequest(w http.ResponseWriter, format string, args ...any) bool {
	return invalid(w, "INVALID_ARGUMENT", "The submitted request has invalid arguments: "+format, args...)
}

func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	if err := json.NewDecoder(r.Body).Decode(v); err != nil {
		return invalid(w, "INVALID_ARGUMENT", "malformed request: %v", err)
	}
	return true
}

// Party hints and user ids as Canton accepts them.
var (
	partyHintRE = regexp.MustCompile(`^[a-zA-Z0-9:\-_ ]{1,185}$`)
	partyIDRE   = regexp.MustCompile(`^[a-zA-Z0-9:\-_ ]{1,185}::1220[0-9a-f]{64}$`)
	userIDRE    = regexp.MustCompile("^[a-zA-Z0-9@^$.!`\\-#+'~_|:()]{1,128}$")
)

// ledger wraps a JSON Ledger API handler: token checked, state locked, saved after a change.
func (n *Network) ledger(name string, mutates bool, h func(w http.ResponseWriter, r *http.Request, ns *nodeState) bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		n.mu.Lock()
		defer n.mu.Unlock()
		ns := n.st.Nodes[name]
		sub := n.subjectLocked(r)
		if sub == "" {
			cantonError(w, http.StatusUnauthorized, "UNAUTHENTICATED", "The command is missing a (valid) JWT token", catAuth, grpcUnauth)
			return
		}
		u := tokenUserLocked(ns, sub)
		if u == nil || u.IsDeactivated {
			cantonError(w, http.StatusForbidden, "PERMISSION_DENIED", "The provided authorization token is not sufficient to authorize the intended command", 7, 7)
			return
		}
		r = r.WithContext(context.WithValue(r.Context(), tokenUserKey{}, u.ID))
		// A read answers false: it changed nothing and costs no traffic.
		n.durably(w, mutates, func(w http.ResponseWriter, msg string) {
			cantonError(w, http.StatusServiceUnavailable, "UNAVAILABLE", msg, catUnavailable, grpcUnavailable)
		}, func(w http.ResponseWriter) bool {
			if !h(w, r, ns) {
				return false
			}
			ns.Traffic.Consumed += 1_000 + r.ContentLength
			return true
		})
	}
}

func (n *Network) ledgerRoutes(mux *http.ServeMux, name string) {
	mux.HandleFunc("GET /v2/version", n.ledger(name, false, n.version))
	mux.HandleFunc("GET /v2/parties", n.ledger(name, false, n.listParties))
	mux.HandleFunc("GET /v2/parties/{party}", n.ledger(name, false, getParties))
	mux.HandleFunc("POST /v2/parties", n.ledger(name, true, allocateParty))
	mux.HandleFunc("GET /v2/users", n.ledger(name, false, n.listUsers))
	mux.HandleFunc("POST /v2/users", n.ledger(name, true, createUser))
	mux.HandleFunc("GET /v2/users/{id}", n.ledger(name, false, getUser))
	mux.HandleFunc("PATCH /v2/users/{id}", n.ledger(name, true, updateUser))
	mux.HandleFunc("GET /v2/authenticated-user", n.ledger(name, false, authenticatedUser))
	mux.HandleFunc("GET /v2/users/{id}/rights", n.ledger(name, false, listRights))
	mux.HandleFunc("POST /v2/users/{id}/rights", n.ledger(name, true, grantRights))
	mux.HandleFunc("PATCH /v2/users/{id}/rights", n.ledger(name, true, revokeRights))
	mux.HandleFunc("GET /v2/packages", n.ledger(name, false, listPackages))
	mux.HandleFunc("POST /v2/dars", n.ledger(name, true, n.uploadDar))
	mux.HandleFunc("POST /v2/parties/external/generate-topology", n.ledger(name, false, func(w http.ResponseWriter, r *http.Request, ns *nodeState) bool {
		return n.generateTopology(w, r, name, ns)
	}))
	mux.HandleFunc("POST /v2/parties/external/allocate", n.ledger(name, true, func(w http.ResponseWriter, r *http.Request, ns *nodeState) bool {
		return n.allocateExternal(w, r, name, ns)
	}))
	mux.HandleFunc("GET /v2/parties/participant-id", n.ledger(name, false, func(w http.ResponseWriter, r *http.Request, ns *nodeState) bool {
		writeJSON(w, http.StatusOK, map[string]string{"participantId": ns.participantUID(name)})
		return false
	}))
	mux.HandleFunc("GET /v2/state/connected-synchronizers", n.ledger(name, false, func(w http.ResponseWriter, r *http.Request, ns *nodeState) bool {
		return n.connectedSynchronizers(w, r, name, ns)
	}))
}

// writePage answers the page of ids (sorted) after pageToken, the last id of
// the previous page, each entry of m as render makes it, under field.
func writePage[T any](w http.ResponseWriter, r *http.Request, max int, m map[string]T, ids []string, field string, render func(T) map[string]any) bool {
	sort.Strings(ids)
	q := r.URL.Query()
	size, err := strconv.Atoi(cmp.Or(q.Get("pageSize"), "0"))
	start := 0
	if tok := q.Get("pageToken"); tok != "" && err == nil {
		var after []byte
		after, err = base64.RawURLEncoding.DecodeString(tok)
		start = sort.SearchStrings(ids, string(after)+"\x00")
	}
	if err != nil || size < 0 || size > max {
		// The ledger refuses a page larger than its maximum rather than
		// clamping it (the maximum is in GET /v2/version's features).
		return badRequest(w, "invalid pageToken, or pageSize above the maximum of %d", max)
	}
	if size == 0 {
		size = max
	}
	end := min(start+size, len(ids))
	next := ""
	if end < len(ids) {
		next = base64.RawURLEncoding.EncodeToString([]byte(ids[end-1]))
	}
	out := make([]any, 0, end-start)
	for _, id := range ids[start:end] {
		out = append(out, render(m[id]))
	}
	writeJSON(w, http.StatusOK, map[string]any{field: out, "nextPageToken": next})
	return false
}

// userOf is the user named by id, nil for none; false when it does not exist (404).
func (ns *nodeState) userOf(w http.ResponseWriter, id string) (*user, bool) {
	if id == "" {
		return nil, true
	}
	u := ns.user(w, id)
	return u, u != nil
}

func partyDetails(p *party) map[string]any {
	ann := p.Annotations
	if ann == nil {
		ann = map[string]string{}
	}
	return map[string]any{"party": p.ID, "isLocal": true, "identityProviderId": "",
		"localMetadata": map[string]any{"resourceVersion": p.ResourceVersion, "annotations": ann}}
}

func (n *Network) listParties(w http.ResponseWriter, r *http.Request, ns *nodeState) bool {
	filter := r.URL.Query().Get("filter-party")
	var ids []string
	for id := range ns.Parties {
		if strings.HasPrefix(id, filter) {
			ids = append(ids, id)
		}
	}
	return writePage(w, r, n.opts.PageSize, ns.Parties, ids, "partyDetails", partyDetails)
}

// getParties answers the known parties of the path and of parameter parties
// (none known is an empty list, as the ledger answers).
func getParties(w http.ResponseWriter, r *http.Request, ns *nodeState) bool {
	out := []any{}
	seen := map[string]bool{}
	for _, id := range append([]string{r.PathValue("party")}, r.URL.Query()["parties"]...) {
		if p := ns.Parties[id]; p != nil && !seen[id] {
			seen[id] = true
			out = append(out, partyDetails(p))
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"partyDetails": out})
	return false
}

// version answers the features Canton's clients read (page size maxima among them).
func (n *Network) version(w http.ResponseWriter, r *http.Request, ns *nodeState) bool {
	writeJSON(w, http.StatusOK, map[string]any{
		"version": Version,
		"features": map[string]any{
			"experimental":     map[string]any{},
			"userManagement":   map[string]any{"supported": true, "maxRightsPerUser": 1000, "maxUsersPageSize": n.opts.PageSize},
			"partyManagement":  map[string]any{"maxPartiesPageSize": n.opts.PageSize},
			"offsetCheckpoint": map[string]any{"maxOffsetCheckpointEmissionDelay": map[string]any{"seconds": 75, "nanos": 0}},
			"packageFeature":   map[string]any{"maxVettedPackagesPageSize": n.opts.PageSize},
		},
	})
	return false
}

// connectedSynchronizers answers the synchronizer with the participant's
// permission, or the party's, left out where the party is not hosted.
func (n *Network) connectedSynchronizers(w http.ResponseWriter, r *http.Request, name string, ns *nodeState) bool {
	permission := "PARTICIPANT_PERMISSION_SUBMISSION"
	if id := r.URL.Query().Get("party"); id != "" {
		permission = ""
		if p := ns.Parties[id]; p != nil && !p.External {
			permission = "PARTICIPANT_PERMISSION_SUBMISSION"
		}
		if h := n.st.Hosting[id]; h != nil {
			hosts := slices.Clone(h.Hosts)
			if h.Proposal != nil {
				hosts = append(hosts, h.Proposal.Hosts...)
			}
			for _, hp := range hosts {
				if hp.ParticipantUID == ns.participantUID(name) && ns.Parties[id] != nil {
					permission = "PARTICIPANT_PERMISSION_" + hp.Permission
					break
				}
			}
		}
	}
	out := []any{}
	if permission != "" {
		out = append(out, map[string]string{"synchronizerAlias": "global", "synchronizerId": n.st.SynchronizerID, "permission": permission})
	}
	writeJSON(w, http.StatusOK, map[string]any{"connectedSynchronizers": out})
	return false
}

func allocateParty(w http.ResponseWriter, r *http.Request, ns *nodeState) bool {
	var req struct {
		PartyIDHint string `json:"partyIdHint"`
		UserID      string `json:"userId"`
	}
	if !decode(w, r, &req) {
		return false
	}
	if req.PartyIDHint == "" {
		req.PartyIDHint = "party-" + randomHex(8)
	}
	if !partyHintRE.MatchString(req.PartyIDHint) || strings.Contains(req.PartyIDHint, "::") {
		return badRequest(w, "Party hint %q is not a valid PartyIdString", req.PartyIDHint)
	}
	if _, ok := ns.Parties[req.PartyIDHint+"::"+ns.Fingerprint]; ok {
		return cantonError(w, http.StatusConflict, "PARTY_ALREADY_EXISTS", "Party already exists: party "+req.PartyIDHint+"::"+ns.Fingerprint+" is already allocated on this node", catExists, grpcExists)
	}
	u, ok := ns.userOf(w, req.UserID)
	if !ok {
		return false
	}
	id := ns.addParty(req.PartyIDHint)
	if u != nil {
		u.Rights = appendNew(u.Rights, []right{{Kind: "CanActAs", Party: id}})
	}
	writeJSON(w, http.StatusOK, map[string]any{"partyDetails": partyDetails(ns.Parties[id])})
	return true
}

func userJSON(u *user) map[string]any {
	ann := u.Annotations
	if ann == nil {
		ann = map[string]string{}
	}
	out := map[string]any{"id": u.ID, "isDeactivated": u.IsDeactivated, "identityProviderId": "",
		"metadata": map[string]any{"resourceVersion": u.ResourceVersion, "annotations": ann}}
	if u.PrimaryParty != "" {
		out["primaryParty"] = u.PrimaryParty
	}
	return out
}

func (n *Network) listUsers(w http.ResponseWriter, r *http.Request, ns *nodeState) bool {
	return writePage(w, r, n.opts.PageSize, ns.Users, slices.Collect(maps.Keys(ns.Users)), "users", userJSON)
}

type wireUser struct {
	ID            string `json:"id"`
	PrimaryParty  string `json:"primaryParty"`
	IsDeactivated bool   `json:"isDeactivated"`
	Metadata      *struct {
		ResourceVersion string            `json:"resourceVersion"`
		Annotations     map[string]string `json:"annotations"`
	} `json:"metadata"`
}

// wireRight is {"kind": {"<Kind>": {"value": {...}}}}.
type wireRight struct {
	Kind map[string]struct {
		Value struct {
			Party string `json:"party"`
		} `json:"value"`
	} `json:"kind"`
}

var partyKinds = map[string]bool{"CanActAs": true, "CanReadAs": true, "CanExecuteAs": true}

// plainKinds are the rights without a party that the 3.4 and 3.5 Ledger
// APIs define (there is no CanActAsAnyParty).
var plainKinds = map[string]bool{"ParticipantAdmin": true, "IdentityProviderAdmin": true, "CanReadAsAnyParty": true, "CanExecuteAsAnyParty": true}

func parseRights(w http.ResponseWriter, in []wireRight, ns *nodeState) ([]right, bool) {
	var out []right
	for _, wr := range in {
		if len(wr.Kind) != 1 {
			return nil, badRequest(w, "a right must have exactly one kind")
		}
		for k, v := range wr.Kind {
			switch {
			case partyKinds[k]:
				if _, ok := ns.Parties[v.Value.Party]; !ok {
					return nil, badRequest(w, "party %q of right %s is not known on this participant", v.Value.Party, k)
				}
				out = append(out, right{Kind: k, Party: v.Value.Party})
			case plainKinds[k]:
				out = append(out, right{Kind: k})
			case k == "Empty":
			default:
				return nil, badRequest(w, "unknown right kind %q", k)
			}
		}
	}
	return out, true
}

func rightsJSON(rs []right) []any {
	out := []any{}
	for _, r := range rs {
		v := map[string]any{}
		if r.Party != "" {
			v["party"] = r.Party
		}
		out = append(out, map[string]any{"kind": map[string]any{r.Kind: map[string]any{"value": v}}})
	}
	return out
}

// appendNew appends the elements of add that have does not hold yet.
func appendNew[T comparable](have, add []T) []T {
	for _, a := range add {
		if !slices.Contains(have, a) {
			have = append(have, a)
		}
	}
	return have
}

func createUser(w http.ResponseWriter, r *http.Request, ns *nodeState) bool {
	var req struct {
		User   wireUser    `json:"user"`
		Rights []wireRight `json:"rights"`
	}
	if !decode(w, r, &req) {
		return false
	}
	if !userIDRE.MatchString(req.User.ID) {
		return badRequest(w, "user id %q is not a valid UserId", req.User.ID)
	}
	if req.User.PrimaryParty != "" && !partyIDRE.MatchString(req.User.PrimaryParty) {
		return badRequest(w, "primary party %q is not a valid party id", req.User.PrimaryParty)
	}
	if _, ok := ns.Users[req.User.ID]; ok {
		return cantonError(w, http.StatusConflict, "USER_ALREADY_EXISTS", "User already exists: "+req.User.ID, catExists, grpcExists)
	}
	rights, ok := parseRights(w, req.Rights, ns)
	if !ok {
		return false
	}
	u := &user{ID: req.User.ID, PrimaryParty: req.User.PrimaryParty, IsDeactivated: req.User.IsDeactivated, ResourceVersion: ns.nextVersion(), Rights: appendNew(nil, rights)}
	if req.User.Metadata != nil {
		u.Annotations = req.User.Metadata.Annotations
	}
	ns.Users[u.ID] = u
	writeJSON(w, http.StatusOK, map[string]any{"user": userJSON(u)})
	return true
}

// user is the user of id; nil when there is none, answered 404.
func (ns *nodeState) user(w http.ResponseWriter, id string) *user {
	u := ns.Users[id]
	if u == nil {
		cantonError(w, http.StatusNotFound, "USER_NOT_FOUND", "User not found: "+id, catMissing, grpcMissing)
	}
	return u
}

func getUser(w http.ResponseWriter, r *http.Request, ns *nodeState) bool {
	if u := ns.user(w, r.PathValue("id")); u != nil {
		writeJSON(w, http.StatusOK, map[string]any{"user": userJSON(u)})
	}
	return false
}

func authenticatedUser(w http.ResponseWriter, r *http.Request, ns *nodeState) bool {
	writeJSON(w, http.StatusOK, map[string]any{"user": userJSON(ns.Users[tokenUser(r)])})
	return false
}

func updateUser(w http.ResponseWriter, r *http.Request, ns *nodeState) bool {
	var req struct {
		User       wireUser `json:"user"`
		UpdateMask struct {
			Paths []string `json:"paths"`
		} `json:"updateMask"`
	}
	if !decode(w, r, &req) {
		return false
	}
	// Concurrent change control: a resource version given must be the
	// user's current one (Canton compares them as numbers).
	var version *int64
	if req.User.Metadata != nil && req.User.Metadata.ResourceVersion != "" {
		v, err := strconv.ParseInt(req.User.Metadata.ResourceVersion, 10, 64)
		if err != nil {
			return invalid(w, "INVALID_FIELD", "The submitted command has a field with invalid value: Invalid field user.metadata.resource_version: Invalid resource version number")
		}
		version = &v
	}
	u := ns.user(w, r.PathValue("id"))
	if u == nil {
		return false
	}
	if req.User.ID != u.ID {
		return badRequest(w, "user.id must be the user of the path")
	}
	if len(req.UpdateMask.Paths) == 0 {
		return badRequest(w, "empty update mask")
	}
	next := *u
	for _, p := range req.UpdateMask.Paths {
		switch p {
		case "primary_party":
			if req.User.PrimaryParty != "" && !partyIDRE.MatchString(req.User.PrimaryParty) {
				return badRequest(w, "primary party %q is not a valid party id", req.User.PrimaryParty)
			}
			next.PrimaryParty = req.User.PrimaryParty
		case "is_deactivated":
			// Canton refuses it: the participant's users would be left
			// without the admin that manages them.
			if req.User.IsDeactivated && u.ID == tokenUser(r) {
				return badRequest(w, "Requesting user cannot self-deactivate")
			}
			next.IsDeactivated = req.User.IsDeactivated
		case "metadata.annotations", "metadata":
			ann := map[string]string{}
			maps.Copy(ann, u.Annotations)
			if req.User.Metadata != nil {
				for k, v := range req.User.Metadata.Annotations {
					if v == "" {
						delete(ann, k)
					} else {
						ann[k] = v
					}
				}
			}
			next.Annotations = ann
		default:
			return badRequest(w, "unknown update path %q", p)
		}
	}
	if version != nil && strconv.FormatInt(*version, 10) != u.ResourceVersion {
		return cantonError(w, http.StatusConflict, "CONCURRENT_USER_UPDATE_DETECTED", "Update operation for user '"+u.ID+"' failed due to a concurrent update to the same user", catContention, grpcAborted)
	}
	next.ResourceVersion = ns.nextVersion()
	*u = next
	writeJSON(w, http.StatusOK, map[string]any{"user": userJSON(u)})
	return true
}

func listRights(w http.ResponseWriter, r *http.Request, ns *nodeState) bool {
	if u := ns.user(w, r.PathValue("id")); u != nil {
		writeJSON(w, http.StatusOK, map[string]any{"rights": rightsJSON(u.Rights)})
	}
	return false
}

func rightsBody(w http.ResponseWriter, r *http.Request, ns *nodeState) (*user, []right, bool) {
	var req struct {
		UserID string      `json:"userId"`
		Rights []wireRight `json:"rights"`
	}
	if !decode(w, r, &req) {
		return nil, nil, false
	}
	u := ns.user(w, r.PathValue("id"))
	if u == nil {
		return nil, nil, false
	}
	if req.UserID != u.ID {
		return nil, nil, badRequest(w, "userId must be the user of the path")
	}
	rs, ok := parseRights(w, req.Rights, ns)
	return u, rs, ok
}

func grantRights(w http.ResponseWriter, r *http.Request, ns *nodeState) bool {
	u, rs, ok := rightsBody(w, r, ns)
	if !ok {
		return false
	}
	had := len(u.Rights)
	u.Rights = appendNew(u.Rights, rs)
	writeJSON(w, http.StatusOK, map[string]any{"newlyGrantedRights": rightsJSON(u.Rights[had:])})
	return true
}

func revokeRights(w http.ResponseWriter, r *http.Request, ns *nodeState) bool {
	u, rs, ok := rightsBody(w, r, ns)
	if !ok {
		return false
	}
	var kept, revoked []right
	for _, x := range u.Rights {
		if slices.Contains(rs, x) {
			revoked = append(revoked, x)
		} else {
			kept = append(kept, x)
		}
	}
	u.Rights = kept
	writeJSON(w, http.StatusOK, map[string]any{"newlyRevokedRights": rightsJSON(revoked)})
	return true
}

func listPackages(w http.ResponseWriter, r *http.Request, ns *nodeState) bool {
	ids := append([]string{}, ns.Packages...)
	sort.Strings(ids)
	writeJSON(w, http.StatusOK, map[string]any{"packageIds": ids})
	return false
}

// uploadDar spools the body to a temporary file: a zip needs random access.
func (n *Network) uploadDar(w http.ResponseWriter, r *http.Request, ns *nodeState) bool {
	f, err := os.CreateTemp(n.dir, "upload-*.dar")
	if err != nil {
		return cantonError(w, http.StatusInternalServerError, "INTERNAL", "spooling failed", 4, 13)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	size, err := io.Copy(f, r.Body)
	if err != nil {
		return invalid(w, "INVALID_ARGUMENT", "reading the DAR failed")
	}
	d, err := readDar(f, size)
	if err != nil {
		return invalid(w, "DAR_PARSE_ERROR", "Failed to parse the dar file content: %v", err)
	}
	ns.Packages = appendNew(ns.Packages, d.Packages)
	ns.Dars = append(ns.Dars, d)
	writeJSON(w, http.StatusOK, map[string]any{})
	return true
}

// maxDalfBytes bounds one DALF the sandbox reads into memory.
const maxDalfBytes = 64 << 20

// readDar takes the package ids of the DALFs the manifest names, Main-Dalf first.
func readDar(f io.ReaderAt, size int64) (dar, error) {
	zr, err := zip.NewReader(f, size)
	if err != nil {
		return dar{}, fmt.Errorf("not a zip archive")
	}
	files := map[string]*zip.File{}
	for _, zf := range zr.File {
		files[zf.Name] = zf
	}
	mf, ok := files["META-INF/MANIFEST.MF"]
	if !ok {
		return dar{}, fmt.Errorf("no META-INF/MANIFEST.MF")
	}
	rc, err := mf.Open()
	if err != nil {
		return dar{}, err
	}
	defer rc.Close()
	attrs := map[string]string{}
	readManifest(rc, attrs)
	if attrs["Format"] != "" && attrs["Format"] != "daml-lf" {
		return dar{}, fmt.Errorf("unsupported format %q", attrs["Format"])
	}
	mainName := attrs["Main-Dalf"]
	if mainName == "" {
		return dar{}, fmt.Errorf("the manifest names no Main-Dalf")
	}
	names := []string{mainName}
	for _, d := range strings.Split(attrs["Dalfs"], ",") {
		if d = strings.TrimSpace(d); d != "" && d != mainName {
			names = append(names, d)
		}
	}
	var ids []string
	for _, name := range names {
		zf, ok := files[name]
		if !ok {
			return dar{}, fmt.Errorf("the manifest names %s, which is not in the archive", name)
		}
		rc, err := zf.Open()
		if err != nil {
			return dar{}, err
		}
		raw, err := io.ReadAll(io.LimitReader(rc, maxDalfBytes+1))
		rc.Close()
		if err != nil {
			return dar{}, err
		}
		if len(raw) > maxDalfBytes {
			return dar{}, fmt.Errorf("%s is larger than %d bytes", name, maxDalfBytes)
		}
		id, err := archivePackageID(raw)
		if err != nil {
			return dar{}, fmt.Errorf("%s: %v", name, err)
		}
		ids = append(ids, id)
	}
	name, version := darNameVersion(attrs)
	return dar{MainPackageID: ids[0], Name: name, Version: version, Packages: ids, SizeBytes: size}, nil
}

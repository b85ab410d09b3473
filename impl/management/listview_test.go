package management

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"testing"

	"github.com/validator-manager/validator-manager/gen/managementapi"
	"github.com/validator-manager/validator-manager/impl/domain"
)

// goldenListView is what listView writes for fullConfig(). A change of the
// rendering shows here first: raise listViewVersion (so that stored views
// of the old rendering are rendered again and refreshed), then rewrite the
// file with go test -update.
const goldenListView = "testdata/list-view-v2.json"

// goldenValidator is the row whose list view the golden file holds.
var goldenValidator = domain.Validator{
	Name: "golden", Phase: domain.PhaseRunning, Immutable: true, CustomAuth: true,
	DatabaseStorage: "20Gi", MigrationID: 4, Migrating: true,
}

func TestListViewGolden(t *testing.T) {
	got := listView(goldenValidator, fullConfig())
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, got, "", "  "); err != nil {
		t.Fatal(err)
	}
	pretty.WriteByte('\n')
	if *update {
		if err := os.WriteFile(goldenListView, pretty.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(goldenListView)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(pretty.Bytes(), want) {
		t.Errorf("the list view of fullConfig() changed under listViewVersion %d: raise listViewVersion, then go test -update\ngot  %s\nwant %s", listViewVersion, pretty.Bytes(), want)
	}
}

// wholeRows is the store of a page's rows whose view must be rendered.
type wholeRows struct {
	Store
	rows map[string]domain.Validator
	read []string
}

func (w *wholeRows) GetValidator(_ context.Context, name string) (domain.Validator, error) {
	w.read = append(w.read, name)
	v, ok := w.rows[name]
	if !ok {
		return domain.Validator{}, domain.NotFound("validator %q not found", name)
	}
	return v, nil
}

// TestListItemIsTheResponse: a list item, spliced from the listed columns
// and the stored view, or rendered from the whole row when its view is
// missing or of another version, is exactly the validator's response, with
// no key twice.
func TestListItemIsTheResponse(t *testing.T) {
	full := goldenValidator
	if err := setConfig(&full, fullConfig()); err != nil {
		t.Fatal(err)
	}
	store := &wholeRows{rows: map[string]domain.Validator{full.Name: full}}
	for _, ns := range []string{"validators", `odd"name<space>&\u00e9`} {
		t.Run(ns, func(t *testing.T) {
			checkListItems(t, &Server{Options: Options{Namespace: ns, Store: store}}, store, full)
		})
	}
}

func checkListItems(t *testing.T, s *Server, store *wholeRows, full domain.Validator) {
	want, err := s.response(full)
	if err != nil {
		t.Fatal(err)
	}
	listed := domain.ListedValidator{Name: full.Name, Phase: full.Phase, Immutable: full.Immutable, ListView: full.ListView, ListViewVersion: listViewVersion}
	noView, oldView, emptyView := listed, listed, listed
	noView.ListView, noView.ListViewVersion = nil, 0
	oldView.ListView, oldView.ListViewVersion = []byte(`{"imageTag":"stale"}`), listViewVersion+1
	emptyView.ListView = []byte(`{}`)
	var columns managementapi.ValidatorResponseDto // what an empty view leaves
	columns.Name, columns.Phase, columns.Immutable = want.Name, want.Phase, want.Immutable
	columns.Participant, columns.LedgerApiAddress, columns.JsonApiAddress = want.Participant, want.LedgerApiAddress, want.JsonApiAddress
	columns.ValidatorApiAddress, columns.Application = want.ValidatorApiAddress, want.Application
	columns.ApplicationWallet, columns.ApplicationLedgerNameServer = want.ApplicationWallet, want.ApplicationLedgerNameServer

	for _, tc := range []struct {
		name      string
		v         domain.ListedValidator
		want      managementapi.ValidatorResponseDto
		wholeRead bool
	}{
		{"stored view", listed, want, false},
		{"no view (a row from before migration 0006)", noView, want, true},
		{"a view of another version", oldView, want, true},
		{"an empty view", emptyView, columns, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store.read = nil
			page, err := s.renderPage(context.Background(), []domain.ListedValidator{tc.v}, 7)
			if err != nil {
				t.Fatal(err)
			}
			body := page.buf.Bytes()
			checkNoDuplicateKeys(t, body)
			var got struct {
				Validators []json.RawMessage `json:"validators"`
				TotalCount int64             `json:"totalCount"`
			}
			if err := json.Unmarshal(body, &got); err != nil {
				t.Fatalf("%v: %s", err, body)
			}
			if got.TotalCount != 7 || len(got.Validators) != 1 {
				t.Fatalf("got %s", body)
			}
			for _, d := range diffJSON("", toJSONObject(t, []byte(got.Validators[0])), toJSONObject(t, tc.want)) {
				t.Errorf("list item differs from the response at %s", d)
			}
			if (len(store.read) > 0) != tc.wholeRead {
				t.Errorf("whole rows read: %v, want a read: %v", store.read, tc.wholeRead)
			}
		})
	}
}

// checkNoDuplicateKeys fails when an object of raw has a key twice.
func checkNoDuplicateKeys(t *testing.T, raw []byte) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	var walk func()
	walk = func() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatalf("%v in %s", err, raw)
		}
		switch tok {
		case json.Delim('{'):
			seen := map[string]bool{}
			for dec.More() {
				k, _ := dec.Token()
				key := k.(string)
				if seen[key] {
					t.Errorf("key %q twice in %s", key, raw)
				}
				seen[key] = true
				walk()
			}
			dec.Token()
		case json.Delim('['):
			for dec.More() {
				walk()
			}
			dec.Token()
		}
	}
	walk()
}

// TestListSkipsRowsRemovedMeanwhile: a row whose view must be rendered
// whole but that is gone by then is left out of the page, not a failure.
func TestListSkipsRowsRemovedMeanwhile(t *testing.T) {
	full := goldenValidator
	if err := setConfig(&full, fullConfig()); err != nil {
		t.Fatal(err)
	}
	store := &wholeRows{rows: map[string]domain.Validator{full.Name: full}}
	s := &Server{Options: Options{Namespace: "validators", Store: store}}
	gone := domain.ListedValidator{Name: "gone", Phase: domain.PhasePending}
	listed := domain.ListedValidator{Name: full.Name, Phase: full.Phase, ListView: full.ListView, ListViewVersion: listViewVersion}
	page, err := s.renderPage(context.Background(), []domain.ListedValidator{gone, listed, gone}, 3)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Validators []struct {
			Name string `json:"name"`
		} `json:"validators"`
	}
	if err := json.Unmarshal(page.buf.Bytes(), &got); err != nil || len(got.Validators) != 1 || got.Validators[0].Name != full.Name {
		t.Fatalf("got %v %s, want golden alone", err, page.buf.Bytes())
	}
}

// TestItemTemplate: the template's items are byte for byte what the
// address functions write, for any name and phase; names and namespaces
// that need escaping keep to the functions.
func TestItemTemplate(t *testing.T) {
	view := []byte(`{"imageTag":"0.4.2"}`)
	for _, ns := range []string{"validators", "team-a", `odd"name<space>&\u00e9`} {
		s := &Server{Options: Options{Namespace: ns}}
		functions := &Server{Options: s.Options}
		functions.templateOnce.Do(func() {}) // no template: the address functions write
		if got := s.itemTemplate() != nil; got != plainJSON(ns) {
			t.Errorf("namespace %q: template %v, want %v", ns, got, plainJSON(ns))
		}
		for _, name := range []string{"node-00001", "a", `we"ird`, "caf\u00e9", "x<y>&z"} {
			for _, phase := range []domain.Phase{domain.PhaseRunning, domain.PhasePending, `PH"ASE`} {
				for _, immutable := range []bool{false, true} {
					var got, want bytes.Buffer
					s.writeItem(&got, name, phase, immutable, view)
					functions.writeItem(&want, name, phase, immutable, view)
					if got.String() != want.String() {
						t.Errorf("namespace %q, name %q, phase %q: got\n%s\nwant\n%s", ns, name, phase, got.String(), want.String())
					}
				}
			}
		}
	}
}

package management

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/validator-manager/validator-manager/impl/domain"
)

// listViewVersion names the rendering of listView: bump it whenever what
// listView writes changes (TestListViewGolden fails until then), so that
// rows of an older version are rendered on read and rewritten by
// RefreshListViews.
const listViewVersion = 2

// listView is a validator's list item but for what writeItem adds, as JSON:
// the column list_view, written with the configuration, so that a page
// splices it instead of decoding the configuration of every row. Marshal
// cannot fail: the response holds only strings, integers, booleans and
// structs and lists of them.
func listView(v domain.Validator, c domain.ValidatorConfig) []byte {
	view, _ := json.Marshal(viewed(v, c))
	return view
}

// setConfig stores c as v's configuration, with v's list view: call it
// after the other columns are set.
func setConfig(v *domain.Validator, c domain.ValidatorConfig) error {
	spec, err := domain.EncodeValidatorConfig(c)
	if err != nil {
		return err
	}
	v.Spec, v.ListView, v.ListViewVersion = spec, listView(*v, c), listViewVersion
	return nil
}

// listPage is a page of validators as JSON: the bytes
// ListValidators200JSONResponse would write for it, in a buffer of pages
// that goes back to the pool once written (a page is tens of kilobytes).
type listPage struct {
	buf *bytes.Buffer
	tag string // the ETag; none when empty
}

var pageBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

func (p listPage) VisitListValidatorsResponse(w http.ResponseWriter) error {
	defer p.release()
	w.Header().Set("Content-Type", "application/json")
	if p.tag != "" {
		w.Header().Set("ETag", p.tag)
	}
	w.WriteHeader(http.StatusOK)
	_, err := w.Write(p.buf.Bytes())
	return err
}

func (p listPage) release() {
	if p.buf.Cap() <= 1<<20 { // an outsized page is not kept
		p.buf.Reset()
		pageBuffers.Put(p.buf)
	}
}

// renderPage writes a page: each item is its name, phase, flag and
// addresses followed by its stored list view. A row whose view is missing
// or of another version is read whole and rendered.
func (s *Server) renderPage(ctx context.Context, rows []domain.ListedValidator, total int64) (listPage, error) {
	b := pageBuffers.Get().(*bytes.Buffer)
	page := listPage{buf: b}
	b.Grow(len(rows)*1400 + 64)
	b.WriteString(`{"validators":[`)
	written := 0
	for _, v := range rows {
		view := v.ListView
		if v.ListViewVersion != listViewVersion || len(view) < 2 {
			full, err := s.Store.GetValidator(ctx, v.Name)
			if errors.Is(err, domain.ErrNotFound) {
				continue // removed since the page was read
			}
			if err == nil {
				var c domain.ValidatorConfig
				if c, err = full.Config(); err == nil {
					view = listView(full, c)
				}
			}
			if err != nil {
				page.release()
				return listPage{}, err
			}
			v.Phase, v.Immutable = full.Phase, full.Immutable
		}
		if written > 0 {
			b.WriteByte(',')
		}
		s.writeItem(b, v.Name, v.Phase, v.Immutable, view)
		written++
	}
	b.WriteString(`],"totalCount":`)
	b.Write(strconv.AppendInt(b.AvailableBuffer(), total, 10))
	b.WriteString("}\n")
	return page, nil
}

// writeItem writes one item: the fields a list view leaves out, then the
// view's fields. The field names are the contract's (ValidatorResponseDto);
// TestListItemIsTheResponse holds the item equal to the validator's response.
func (s *Server) writeItem(b *bytes.Buffer, name string, phase domain.Phase, immutable bool, view []byte) {
	b.WriteString(`{"name":`)
	writeString(b, name)
	b.WriteString(`,"phase":`)
	writeString(b, string(phase))
	b.WriteString(`,"immutable":`)
	b.WriteString(strconv.FormatBool(immutable))
	if t := s.itemTemplate(); t != nil && plainJSON(name) {
		// The same bytes as writeAddresses, from the template.
		for _, part := range t[:len(t)-1] {
			b.WriteString(part)
			b.WriteString(name)
		}
		b.WriteString(t[len(t)-1])
	} else {
		s.writeAddresses(b, name)
	}
	if len(view) > 2 {
		b.WriteByte(',')
		b.Write(view[1:])
	} else {
		b.WriteByte('}')
	}
}

// itemAddresses are the addresses of an item, in the order written, as
// response has them.
var itemAddresses = [...]struct {
	key  string
	addr func([]byte, string, string) []byte
}{
	{"participant", appendHost(domain.ServiceParticipant)},
	{"ledgerApiAddress", domain.AppendLedgerAPIAddress},
	{"jsonApiAddress", domain.AppendJSONAPIURL},
	{"validatorApiAddress", domain.AppendValidatorAppURL},
	{"application", appendHost(domain.ServiceValidatorApp)},
	{"applicationWallet", appendHost(domain.ServiceWalletUI)},
	{"applicationLedgerNameServer", appendHost(domain.ServiceANSUI)},
}

// writeAddresses writes an item's addresses, each appended in the page's
// buffer rather than built as a string.
func (s *Server) writeAddresses(b *bytes.Buffer, name string) {
	// The addresses are the name, the namespace and plain characters: plain
	// JSON when those two are, tested once rather than in each address.
	prefix, ns := s.servicesOf(name)
	plain := plainJSON(prefix) && plainJSON(ns)
	for _, f := range itemAddresses {
		b.WriteString(`,"`)
		b.WriteString(f.key)
		b.WriteString(`":`)
		b.WriteByte('"')
		addr := f.addr(b.AvailableBuffer(), prefix, ns)
		if !plain && !plainJSON(addr) {
			b.Truncate(b.Len() - 1)
			writeString(b, string(addr))
			continue
		}
		b.Write(addr)
		b.WriteByte('"')
	}
}

// itemTemplate is what an item's addresses write around its name: part i
// precedes the name's i-th occurrence, the last part closes the addresses.
// The address functions make it once, with a marker for the name; nil when
// the namespace needs escaping or an address lacks the name.
func (s *Server) itemTemplate() []string {
	s.templateOnce.Do(func() {
		// In chart mode the namespace is each validator's own.
		if s.Release != nil || !plainJSON(s.Namespace) {
			return
		}
		const marker = "\x00"
		var around []string
		open := ""
		for _, f := range itemAddresses {
			addr := string(f.addr(nil, marker, s.Namespace))
			before, after, ok := strings.Cut(addr, marker)
			if !ok || strings.Contains(after, marker) || !plainJSON(before) || !plainJSON(after) {
				return
			}
			around = append(around, open+`,"`+f.key+`":"`+before)
			open = after + `"`
		}
		s.template = append(around, open)
	})
	return s.template
}

// appendHost is domain.AppendServiceHost of one service.
func appendHost(service string) func([]byte, string, string) []byte {
	return func(b []byte, validator, namespace string) []byte {
		return domain.AppendServiceHost(b, validator, service, namespace)
	}
}

// writeString writes s as a JSON string as encoding/json writes it.
func writeString(b *bytes.Buffer, s string) {
	if !plainJSON(s) {
		raw, _ := json.Marshal(s)
		b.Write(raw)
		return
	}
	b.WriteByte('"')
	b.WriteString(s)
	b.WriteByte('"')
}

// plainJSON tells whether s has no character encoding/json escapes, as
// names, phases and addresses (DNS-like) have none.
func plainJSON[T string | []byte](s T) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// RefreshListViews rewrites, a batch at a time, the list views that are not
// of this server's version: reads are right without it, but slower. A row
// edited meanwhile is left to its edit, which wrote its view.
func (s *Server) RefreshListViews(ctx context.Context) error {
	const batch = 500
	for after := ""; ; {
		stale, err := s.Store.StaleListViews(ctx, listViewVersion, after, batch)
		if err != nil || len(stale) == 0 {
			return err
		}
		updates := make([]domain.ListViewUpdate, 0, len(stale))
		for _, v := range stale {
			after = v.Name
			c, err := v.Config()
			if err != nil {
				// Reads report the broken configuration; skip it here.
				s.Logger.WarnContext(ctx, "list view not refreshed: stored configuration unreadable", "validator", v.Name, "error", err)
				continue
			}
			updates = append(updates, domain.ListViewUpdate{
				Name: v.Name, UpdatedAt: v.UpdatedAt, View: listView(v, c), Version: listViewVersion,
			})
		}
		if err := s.Store.SetListViews(ctx, updates); err != nil {
			return err
		}
		if len(stale) < batch {
			return nil
		}
	}
}

package recovery

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

func TestCopyMember(t *testing.T) {
	big := strings.Repeat("QUJD", 300_000) // a base64 string larger than the scanner's buffer
	cases := []struct {
		name, body, want, wantErr string
	}{
		{name: "only member", body: `{"data_snapshot":{"a":1}}`, want: `{"a":1}`},
		{name: "kept byte for byte", body: "{ \"migration_id\" : 3 ,\n \"data_snapshot\" :\t{ \"s\": \"\\u00e9\\\"}{[\" , \"n\": [1.50e+2, -0, true, false, null, {}, []] } }\n",
			want: `{ "s": "\u00e9\"}{[" , "n": [1.50e+2, -0, true, false, null, {}, []] }`},
		{name: "members around it", body: `{"a":[{"data_snapshot":1}],"b":"x","data_snapshot":{"k":"v"},"c":{"d":null},"migration_id":3}`, want: `{"k":"v"}`},
		{name: "escaped member name", body: `{"data\u005fsnapshot":{}}`, want: `{}`},
		{name: "large string", body: `{"data_snapshot":{"acs_snapshot":"` + big + `"},"migration_id":3}`, want: `{"acs_snapshot":"` + big + `"}`},
		{name: "missing", body: `{"migration_id":3}`, wantErr: "has no data_snapshot"},
		{name: "empty object", body: `{}`, wantErr: "has no data_snapshot"},
		{name: "not an object", body: `[{"data_snapshot":{}}]`, wantErr: "not a JSON object"},
		{name: "value not an object", body: `{"data_snapshot":"abc"}`, wantErr: "data_snapshot is not a JSON object"},
		{name: "null value", body: `{"data_snapshot":null}`, wantErr: "data_snapshot is not a JSON object"},
		{name: "twice", body: `{"data_snapshot":{},"data_snapshot":{}}`, wantErr: "twice"},
		{name: "truncated", body: `{"data_snapshot":{"a":"b`, wantErr: "unexpected EOF"},
		{name: "truncated after the value", body: `{"data_snapshot":{}`, wantErr: "unexpected EOF"},
		{name: "mismatched brackets", body: `{"data_snapshot":{"a":[1}}`, wantErr: "unexpected '}'"},
		{name: "bad scalar", body: `{"x":tru,"data_snapshot":{}}`, wantErr: "invalid value"},
		{name: "missing colon", body: `{"data_snapshot" {}}`, wantErr: "expected ':'"},
		{name: "trailing data", body: `{"data_snapshot":{}} x`, wantErr: "data after the object"},
		{name: "control character", body: "{\"data_snapshot\":{\"a\":\"\n\"}}", wantErr: "control character"},
		{name: "empty body", body: ``, wantErr: "unexpected EOF"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, r := range []struct {
				name string
				r    io.Reader
			}{{"whole", strings.NewReader(tc.body)}, {"byte by byte", iotest.OneByteReader(strings.NewReader(tc.body))}} {
				var out bytes.Buffer
				err := copyMember(r.r, "data_snapshot", &out)
				if tc.wantErr != "" {
					if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
						t.Errorf("%s: got error %v, want one containing %q", r.name, err, tc.wantErr)
					}
					continue
				}
				if err != nil {
					t.Fatalf("%s: got error %v, want none", r.name, err)
				}
				if got := out.String(); got != tc.want {
					t.Errorf("%s: got %.200q, want %.200q", r.name, got, tc.want)
				}
			}
		})
	}
}

// TestCopyMemberWriteError: a failing destination stops the copy with its error.
func TestCopyMemberWriteError(t *testing.T) {
	full := errors.New("no space left on device")
	err := copyMember(strings.NewReader(`{"data_snapshot":{"a":1}}`), "data_snapshot", failingWriter{full})
	if !errors.Is(err, full) {
		t.Errorf("got %v, want %v", err, full)
	}
}

type failingWriter struct{ err error }

func (f failingWriter) Write([]byte) (int, error) { return 0, f.err }

func TestExcerpt(t *testing.T) {
	cases := []struct{ body, want string }{
		{"", ""},
		{"  \n ", ""},
		{"boom\n\tat line\x00 2", ": boom at line 2"},
		{strings.Repeat("é", 300), ": " + strings.Repeat("é", maxExcerpt) + "…"},
	}
	for _, tc := range cases {
		if got := excerpt(strings.NewReader(tc.body)); got != tc.want {
			t.Errorf("excerpt(%.20q): got %q, want %q", tc.body, got, tc.want)
		}
	}
}

func TestSize(t *testing.T) {
	cases := []struct {
		n    int64
		want string
	}{{0, "0 B"}, {1023, "1023 B"}, {1024, "1.0 KiB"}, {12_897_484, "12.3 MiB"}, {5 << 30, "5.0 GiB"}}
	for _, tc := range cases {
		if got := size(tc.n); got != tc.want {
			t.Errorf("size(%d): got %q, want %q", tc.n, got, tc.want)
		}
	}
}

package domain_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/validator-manager/validator-manager/impl/domain"
)

func TestDecodeValidatorConfig(t *testing.T) {
	tests := []struct {
		name        string
		stored      string
		wantVersion int
		wantTag     string
		wantErr     error
		wantErrText string
	}{
		{name: "version 0 (no marker)", stored: `{"name":"a","imageTag":"0.4.1","clusterConfig":{"migration":{"id":1}},"writtenSecrets":{}}`, wantTag: "0.4.1"},
		{name: "version 1", stored: `{"version":1,"name":"a","imageTag":"0.5.0"}`, wantVersion: 1, wantTag: "0.5.0"},
		{name: "version 2", stored: `{"version":2,"name":"a","imageTag":"0.6.0","participant":{"envVars":null,"resources":{"limits":{"cpu":"2"}},"replicas":1}}`, wantVersion: 2, wantTag: "0.6.0"},
		{name: "version 1 layout", stored: `{"version":1,"name":"a","imageTag":"0.5.0","phase":"RUNNING","participant":{"envVars":null,"resources":{"cpuLimit":"2"}}}`, wantVersion: 1, wantTag: "0.5.0"},
		{name: "version 1 marker, version 2 layout", stored: `{"version":1,"name":"a","participant":{"envVars":null,"resources":{"limits":{"cpu":"2"}}}}`, wantErrText: `unknown field "limits"`},
		{name: "newer version", stored: `{"version":3,"name":"a","somethingNew":true}`, wantErr: domain.ErrConfigVersion, wantErrText: "version 3 was written by a newer server; this one reads up to version 2"},
		{name: "negative version", stored: `{"version":-1}`, wantErr: domain.ErrConfigVersion},
		{name: "version not a number", stored: `{"version":"1"}`, wantErr: domain.ErrConfigVersion},
		{name: "unknown field", stored: `{"version":1,"name":"a","somethingNew":true}`, wantErrText: `unknown field "somethingNew"`},
		{name: "not JSON", stored: `{"name":`, wantErrText: "stored validator configuration"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := domain.DecodeValidatorConfig([]byte(tc.stored))
			if tc.wantErr == nil && tc.wantErrText == "" {
				if err != nil {
					t.Fatalf("got %v, want nil", err)
				}
				if c.Version != tc.wantVersion || c.ImageTag != tc.wantTag {
					t.Fatalf("got version %d tag %q, want %d %q", c.Version, c.ImageTag, tc.wantVersion, tc.wantTag)
				}
				return
			}
			if err == nil {
				t.Fatalf("got %+v, want an error", c)
			}
			if tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Errorf("got %v, want %v", err, tc.wantErr)
			}
			if !strings.Contains(err.Error(), tc.wantErrText) {
				t.Errorf("got %q, want it to contain %q", err, tc.wantErrText)
			}
		})
	}
}

func TestEncodeValidatorConfigMarksVersion(t *testing.T) {
	old, err := domain.DecodeValidatorConfig([]byte(`{"name":"a","writtenSecrets":{}}`))
	if err != nil {
		t.Fatal(err)
	}
	b, err := domain.EncodeValidatorConfig(old)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(b), `{"version":2,`) {
		t.Fatalf("got %s, want the version marker 2 first", b)
	}
	again, err := domain.DecodeValidatorConfig(b)
	if err != nil || again.Version != domain.ValidatorConfigVersion || again.Name != "a" {
		t.Fatalf("got %+v, %v, want version 2 named a", again, err)
	}
}

func TestValidatorConfigTypedFields(t *testing.T) {
	s := func(v string) *string { return &v }
	tests := []struct {
		name             string
		c                domain.ValidatorConfig
		wantClass, wantU string
	}{
		{name: "none", c: domain.ValidatorConfig{}},
		{name: "set", c: domain.ValidatorConfig{Cluster: domain.Cluster{StorageClass: s("fast")}, Database: &domain.Database{Username: s("cnadmin")}, LegacyDatabaseUser: s("old")}, wantClass: "fast", wantU: "cnadmin"},
		{name: "deprecated user", c: domain.ValidatorConfig{Database: &domain.Database{Hostname: s("h")}, LegacyDatabaseUser: s("old")}, wantU: "old"},
	}
	for _, tc := range tests {
		if got := tc.c.StorageClass(); got != tc.wantClass {
			t.Errorf("%s: StorageClass got %q, want %q", tc.name, got, tc.wantClass)
		}
		if got := tc.c.DatabaseUser(); got != tc.wantU {
			t.Errorf("%s: DatabaseUser got %q, want %q", tc.name, got, tc.wantU)
		}
	}
}

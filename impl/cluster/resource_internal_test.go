package cluster

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/validator-manager/validator-manager/impl/domain"
)

// TestValidatorSpec: spec.config is the stored configuration in the current
// version, the typed fields beside it come from the domain type, and a
// configuration of a version this server does not know is refused rather
// than rewritten.
func TestValidatorSpec(t *testing.T) {
	tests := []struct {
		name       string
		stored     string
		wantConfig map[string]any
		wantTyped  map[string]any
		wantErr    error
	}{
		{
			name:       "version 0 row is written as version 2",
			stored:     `{"name":"v","clusterConfig":{"pvcVolumeStorageClass":"fast","migration":{"id":1}},"databaseConfig":{"username":"cnadmin"},"writtenSecrets":{}}`,
			wantConfig: map[string]any{"version": int64(2), "name": "v", "databaseConfig": map[string]any{"username": "cnadmin"}},
			wantTyped:  map[string]any{"storageClass": "fast", "database": map[string]any{"user": "cnadmin"}},
		},
		{
			name:       "deprecated database user",
			stored:     `{"version":1,"name":"v","sqlDbUser":"old"}`,
			wantConfig: map[string]any{"version": int64(2), "sqlDbUser": "old"},
			wantTyped:  map[string]any{"database": map[string]any{"user": "old"}},
		},
		{
			name:       "no storage class, no user",
			stored:     `{"version":1,"name":"v","phase":"RUNNING","participant":{"envVars":null,"resources":{"cpuLimit":"2","replicas":2}}}`,
			wantConfig: map[string]any{"version": int64(2), "phase": nil, "participant": map[string]any{"resources": map[string]any{"limits": map[string]any{"cpu": "2"}}, "replicas": int64(2)}},
			wantTyped:  map[string]any{"storageClass": nil, "database": nil},
		},
		{name: "newer version", stored: `{"version":3,"name":"v"}`, wantErr: domain.ErrConfigVersion},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			spec, err := validatorSpec(domain.Validator{Name: "v", Spec: []byte(tc.stored)}, nil)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("got %v, %v, want %v", spec, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			// As the API server gets it: the apply configuration's JSON.
			raw, err := json.Marshal(spec)
			if err != nil {
				t.Fatal(err)
			}
			var sent map[string]any
			if err := utiljson.Unmarshal(raw, &sent); err != nil {
				t.Fatal(err)
			}
			config := sent["config"].(map[string]any)
			for k, want := range tc.wantConfig {
				if got := config[k]; !reflect.DeepEqual(got, want) {
					t.Errorf("spec.config.%s: got %#v, want %#v", k, got, want)
				}
			}
			for k, want := range tc.wantTyped {
				if got := sent[k]; !reflect.DeepEqual(got, want) {
					t.Errorf("spec.%s: got %#v, want %#v", k, got, want)
				}
			}
		})
	}
}

package cluster

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/validator-manager/validator-manager/impl/apis/v1alpha1"
	"github.com/validator-manager/validator-manager/impl/domain"
)

// TestValidatorSpecIsTyped: the spec the gateway applies decodes into
// v1alpha1.ValidatorSpec without an unknown field, and that typed spec is in
// step with it (covers), so the typed controller and the gateway agree.
func TestValidatorSpecIsTyped(t *testing.T) {
	ptr := func(s string) *string { return &s }
	yes := true
	next := time.Date(2026, 11, 24, 8, 0, 0, 123456789, time.UTC)
	replicas, sizeLimit := int32(2), resource.MustParse("1Gi")
	cfg := domain.ValidatorConfig{
		Name: "v", ImageRepo: "ghcr.io/example", ImageTag: "0.5.1", CustomAuth: &yes,
		Auth: &domain.Auth{Audience: "aud", LedgerAPIClient: "c", LedgerAPIUser: "u", WalletClient: "w", NameServiceClient: "n", JWKSURL: ptr("https://idp.test/jwks")},
		Cluster: domain.Cluster{
			ScanAddress: "http://scan.test", PartyHint: "p-1", StorageClass: ptr("fast"),
			ExtraSynchronizers: &[]domain.Synchronizer{{Alias: ptr("d1"), URL: ptr("https://d1.test")}},
			TopUp:              &domain.TopUp{Enable: &yes},
			Prune:              &domain.PruneScheduleRequest{Cron: "0 0 * * * ?", MaxDuration: "5m", Retention: "48h", NextRun: &next},
			Migration:          domain.Migration{ID: 2, Migrating: &yes},
			Wallet: &domain.App{EnvVars: []corev1.EnvVar{{Name: "A", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Key: "k"}}}}},
		},
		Participant: domain.App{Workload: domain.Workload{
			Resources: &corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}}, Replicas: &replicas,
			ImagePullSecrets: []corev1.LocalObjectReference{{Name: "regcred"}}}},
		DatabaseWorkload: &domain.DatabaseWorkload{
			Volumes:      &[]corev1.Volume{{Name: "x", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: &sizeLimit}}}},
			VolumeMounts: &[]corev1.VolumeMount{{Name: "x", MountPath: "/x"}}},
		Database:       &domain.Database{Username: ptr("cnadmin")},
		WalletSweeps:   []domain.WalletSweep{{MaxBalanceUSD: "10", MinBalanceUSD: "1", ReceiverPartyID: "r", SenderPartyID: "s"}},
		WrittenSecrets: domain.WrittenSecrets{Onboarding: true},
	}
	stored, err := domain.EncodeValidatorConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	v := domain.Validator{Name: "v", DatabaseStorage: "20Gi", MigrationID: 2, Migrating: true, CustomAuth: true, Spec: stored}
	prune := &domain.PruneSchedule{Cron: "0 0 * * * ?", MaxDuration: 5 * time.Minute, Retention: 48 * time.Hour, MaxDurationText: "5m", RetentionText: "48h"}
	spec, err := validatorSpec(v, prune)
	if err != nil {
		t.Fatal(err)
	}
	spec.WithSecrets(secretRefs("v", domain.WrittenSecrets{Onboarding: true, LedgerAPIAuth: true, Database: true}))
	written, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	var typed v1alpha1.ValidatorSpec
	dec := json.NewDecoder(bytes.NewReader(written))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&typed); err != nil {
		t.Fatalf("the gateway's spec does not decode into v1alpha1.ValidatorSpec: %v", err)
	}
	back, err := json.Marshal(typed)
	if err != nil {
		t.Fatal(err)
	}
	// The resource as stored (the typed spec) is in step with the apply:
	// it holds every field applied, and only defaults beside them.
	if !jsonCovers(spec, typed, isZero) {
		t.Errorf("typed spec encodes as\n%s\nwhich does not cover the gateway's\n%s", back, written)
	}
	if typed.Config.Cluster.Prune.NextRun == nil || !typed.Config.Cluster.Prune.NextRun.Equal(next) {
		t.Errorf("nextRun %v, want %v (sub-second precision kept)", typed.Config.Cluster.Prune.NextRun, next)
	}
	if typed.Secrets == nil || typed.Secrets.Database == nil || typed.Secrets.Database.Key != DatabaseSecretKey {
		t.Errorf("spec.secrets: got %+v, want every Secret referenced", typed.Secrets)
	}
}

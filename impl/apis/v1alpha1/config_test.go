package v1alpha1_test

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/validator-manager/validator-manager/impl/apis/v1alpha1"
)

func quantities(kv ...string) corev1.ResourceList {
	l := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return l
}

// legacyWant is testdata/stored-config-v1.json (written by the server of
// stored version 1 from a create payload) in the current types.
func legacyWant() v1alpha1.ValidatorConfig {
	env := func(name, value string) corev1.EnvVar { return corev1.EnvVar{Name: name, Value: value} }
	return v1alpha1.ValidatorConfig{
		Version: 1, Name: "legacy", ImageRepo: "ghcr.io/digital-asset/decentralized-canton-sync/docker", ImageTag: "0.4.2",
		Cluster: v1alpha1.Cluster{
			ScanAddress: "http://scan.test", SVSponsorAddress: "http://sv.test", PartyHint: "acme-legacy-1", DefaultJVMOptions: "-Xmx2g",
			Migration: v1alpha1.Migration{ID: 3, Migrating: ptr.To(false)},
			AdditionalUsersEnvVars: &[]corev1.EnvVar{{Name: "USER_SECRET", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "users"}, Key: "u1", Optional: ptr.To(true)}}}},
			ValidatorApp: v1alpha1.App{EnvVars: []corev1.EnvVar{env("EXTRA", "1")}, Workload: v1alpha1.Workload{
				Resources: &corev1.ResourceRequirements{Requests: quantities("cpu", "500m", "memory", "123Mi"), Limits: quantities("cpu", "2", "memory", "4Gi")},
				Replicas:  ptr.To[int32](1), ImagePullSecrets: []corev1.LocalObjectReference{{Name: "regcred"}},
			}},
			NameService: v1alpha1.App{EnvVars: []corev1.EnvVar{}},
			Wallet: &v1alpha1.App{EnvVars: []corev1.EnvVar{env("W", "w")}, Workload: v1alpha1.Workload{
				Resources: &corev1.ResourceRequirements{Limits: quantities("memory", "1536Mi")}}},
		},
		ParticipantNode: v1alpha1.ParticipantNode{EnableHealthProbes: ptr.To(true)},
		Participant: v1alpha1.App{EnvVars: []corev1.EnvVar{env("P_VAR", "p")}, Workload: v1alpha1.Workload{
			Resources: &corev1.ResourceRequirements{Requests: quantities("memory", "2Gi"), Limits: quantities("cpu", "4")}, Replicas: ptr.To[int32](1)}},
		EnvVars: &[]corev1.EnvVar{env("TOP", "t")},
		DatabaseWorkload: &v1alpha1.DatabaseWorkload{
			Args: &[]string{"-c", "shared_buffers=256MB"}, Image: ptr.To("postgres:14"),
			Workload:     v1alpha1.Workload{Resources: &corev1.ResourceRequirements{Requests: quantities("cpu", "250m"), Limits: quantities("memory", "8Gi")}},
			VolumeMounts: &[]corev1.VolumeMount{{Name: "shm", MountPath: "/dev/shm"}, {Name: "conf", MountPath: "/etc/pg", SubPath: "pg.conf", ReadOnly: true}},
			Volumes: &[]corev1.Volume{
				{Name: "shm", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: ptr.To(resource.MustParse("1Gi"))}}},
				{Name: "conf", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "pg-conf"},
					DefaultMode: ptr.To[int32](420), Items: []corev1.KeyToPath{{Key: "pg.conf", Path: "pg.conf", Mode: ptr.To[int32](256)}}}}},
				{Name: "certs", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "pg-certs", Optional: ptr.To(true)}}},
				{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/log", Type: ptr.To(corev1.HostPathDirectory)}}},
				{Name: "extra", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "pg-extra", ReadOnly: true}}},
			},
		},
		WrittenSecrets: v1alpha1.WrittenSecrets{Database: true},
	}
}

func readFixture(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/stored-config-v1.json")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestDecodeVersion1: a stored version 1 configuration (a database row, a
// Validator's spec.config) reads as the current types, its phase dropped;
// its next write is version 2 and reads back the same.
func TestDecodeVersion1(t *testing.T) {
	got, err := v1alpha1.DecodeValidatorConfig(readFixture(t))
	if err != nil {
		t.Fatalf("decode version 1: %v", err)
	}
	if want := legacyWant(); !equality.Semantic.DeepEqual(got, want) {
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want)
		t.Fatalf("version 1 decoded as\n%s\nwant\n%s", g, w)
	}
	raw, err := v1alpha1.EncodeValidatorConfig(got)
	if err != nil {
		t.Fatal(err)
	}
	var marker struct {
		Version int             `json:"version"`
		Phase   json.RawMessage `json:"phase"`
	}
	if err := json.Unmarshal(raw, &marker); err != nil || marker.Version != 2 || marker.Phase != nil {
		t.Fatalf("rewritten: version %d phase %s (%v), want version 2 without phase", marker.Version, marker.Phase, err)
	}
	back, err := v1alpha1.DecodeValidatorConfig(raw)
	if err != nil {
		t.Fatalf("decode the rewritten version 2: %v", err)
	}
	want := legacyWant()
	want.Version = 2
	if !equality.Semantic.DeepEqual(back, want) {
		t.Errorf("version 2 reads back as %+v", back)
	}
}

// TestDecodeVersions: strictness, a newer version, and a version 1
// spec.config as the API server hands it out after the CRD changed (the
// fields of the old layout pruned).
func TestDecodeVersions(t *testing.T) {
	fixture := string(readFixture(t))
	pruned := strings.NewReplacer(`"cpuLimit": "2",`, ``, `"amount": "1",`, ``, `"format": "Gi"`, ``, `"path": "/dev/shm"`, `"name2": "x"`).Replace(fixture)
	for _, tc := range []struct {
		name        string
		doc         string
		strictErr   bool
		lenientErr  bool
		wantVersion error
	}{
		{"version 1", fixture, false, false, nil},
		{"version 1 with an unknown field", strings.Replace(fixture, `"name": "legacy"`, `"name": "legacy", "extra": 1`, 1), true, false, nil},
		{"version 1 pruned by the API server", pruned, true, false, nil},
		{"version 0 (no marker)", strings.Replace(fixture, `"version": 1,`, ``, 1), false, false, nil},
		{"version 3", strings.Replace(fixture, `"version": 1,`, `"version": 3,`, 1), true, true, v1alpha1.ErrConfigVersion},
		{"version 2 in the old layout", strings.Replace(fixture, `"version": 1,`, `"version": 2,`, 1), true, true, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := v1alpha1.DecodeValidatorConfig([]byte(tc.doc))
			if (err != nil) != tc.strictErr || (tc.wantVersion != nil && !errors.Is(err, tc.wantVersion)) {
				t.Errorf("DecodeValidatorConfig: got %v, want error %v", err, tc.strictErr)
			}
			var c v1alpha1.ValidatorConfig
			err = json.Unmarshal([]byte(tc.doc), &c)
			if (err != nil) != tc.lenientErr {
				t.Errorf("UnmarshalJSON: got %v, want error %v", err, tc.lenientErr)
			}
			if err == nil && (c.Name != "legacy" || len(c.Participant.EnvVars) != 1) {
				t.Errorf("UnmarshalJSON: got name %q env %v", c.Name, c.Participant.EnvVars)
			}
		})
	}
}

// An imageRepo stored in versions 0 and 1 in the form earlier servers
// documented (…/docker/validator-app) reads as the registry prefix, so that
// the workloads name images that exist; version 2 is read as written.
func TestDecodeLegacyImageRepo(t *testing.T) {
	fixture := string(readFixture(t))
	old := strings.Replace(fixture, `"imageRepo": "ghcr.io/digital-asset/decentralized-canton-sync/docker"`,
		`"imageRepo": "ghcr.io/digital-asset/decentralized-canton-sync/docker/validator-app"`, 1)
	for _, tc := range []struct{ name, doc, want string }{
		{"version 1, component in imageRepo", old, "ghcr.io/digital-asset/decentralized-canton-sync/docker"},
		{"version 0, component in imageRepo", strings.Replace(old, `"version": 1,`, ``, 1), "ghcr.io/digital-asset/decentralized-canton-sync/docker"},
		{"version 1, registry prefix", fixture, "ghcr.io/digital-asset/decentralized-canton-sync/docker"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := v1alpha1.DecodeValidatorConfig([]byte(tc.doc))
			if err != nil {
				t.Fatal(err)
			}
			if c.ImageRepo != tc.want {
				t.Errorf("imageRepo: got %q, want %q", c.ImageRepo, tc.want)
			}
		})
	}
	v2 := v1alpha1.ValidatorConfig{Name: "v", ImageRepo: "registry.example.test/validator-app"}
	b, err := v1alpha1.EncodeValidatorConfig(v2)
	if err != nil {
		t.Fatal(err)
	}
	if c, err := v1alpha1.DecodeValidatorConfig(b); err != nil || c.ImageRepo != v2.ImageRepo {
		t.Errorf("version 2: got %q %v, want %q", c.ImageRepo, err, v2.ImageRepo)
	}
}
